"""Patches to the internals of third-party tools, each checked against the version it was written for.

Built on: the engine (it uses none of it: it patches the grader).

The modules, in order: each imports only the engine and modules above it in this list
(``tests/repo/test_layers.py`` checks it):

* ``patches`` -- the patch to otter-grader's runner, and the versions they were written for

A patch reaches into code that its authors may change in any release. So each one names the
distributions whose internals it touches, :data:`~chainrule_course.compat.patches.WRITTEN_FOR` says
which version of each it was read against, and applying it refuses any other version.
``tests/course/test_compat.py`` fails when a pin in ``requirements.txt`` moves away from that table:
whoever moves the pin re-reads the patch, then the table.
"""
