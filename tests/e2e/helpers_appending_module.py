"""A helper from another module that changes the list it is given
(test_helpers_appending_to_lists_their_object_holds)."""


def record(lst, v):
    lst.append(v)
