"""The book: the course as an offline static site for self-paced readers (``python -m coursetools book``).
Imported by :mod:`coursetools.cli` and tests; it uses authoring and the shared renderer, never the grader.

- :mod:`~coursetools.book.build`: strip, execute (cached) and write the site;
- :mod:`~coursetools.book.pages`: one page per chapter, the landing page, the guides;
- :mod:`~coursetools.book.apidoc`: the dplib API reference (a page per module and an index), from
  the docstrings ``help()`` shows;
- :mod:`~coursetools.book.search`: the offline search index (``static/search-index.js``);
- ``assets/``: ``book.css`` (phone, dark, print) and ``book.js`` (menu, copy buttons, search).
"""
