"""The workspace as git sees it: which files count, read without letting the workspace run code.

A workspace is often a git repository of many thousands of files, most of them ignored
(``node_modules``, virtualenvs, build output). Everything that lists, searches or watches it
goes through this package so its cost follows what is asked, not the size of the tree:

- ``git`` is the one door to the ``git`` program: every call is made so that nothing the
  workspace's own configuration names (fsmonitor, filters, hooks, pagers, ...) can run;
- ``ignore`` is ``.gitignore`` matching in Python, for workspaces that are not repositories
  and for paths git has not seen yet;
- ``listing`` is the files of a workspace, tracked first, ignored trees never entered, with a
  cap and a count of what lies beyond it.
"""
