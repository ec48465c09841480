"""``make progress``: a class's practice records, exported from the book's pages, in one HTML page.

A reader's browser keeps what they practised (``chainrule_course/pages/progress.js``); the
Practice page's *Export progress* saves it as ``chainrule-progress.json``. An instructor puts
the files students hand in under one folder and runs ``python -m tools.progress <folder>``:
one self-contained page, no server, no script, says per chapter who practised what, how
often they were right, the mistakes the drills named most often, and which records were
not counted and why. The records are self-reported, and the page says so.

The modules, each importing only those above it:

* ``edition`` -- what the report knows of the book: its chapters, drill kinds, exercises and version
* ``checks`` -- the rules one record's fields are held to: what the page never writes, or writes
  only with a wrong clock or at a pace no person answers, and what is unusual
* ``records`` -- the folder's files read into records, a student's name from the file's path
* ``tally`` -- the class's numbers: per chapter, drill kind, exercise and student
* ``charts`` -- bar charts as inline SVG, accessible and legible on a phone
* ``page`` -- the HTML page
"""
