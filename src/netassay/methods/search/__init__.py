"""NDR and PDR search with MLRsearch (FD.io CSIT, draft-ietf-bmwg-mlrsearch).

The goals and load range (``shared/search_spec.py``, pure) and the MLRsearch package
around any ``trial function`` (``shared/search_engine.py``, pure: it runs against a
synthetic SUT in the tests) are below the methods, where the PDR of a stored search is
read for other methods too (``shared/stored_search.py``); ``run`` puts the search on
the testbed and the store, ``view`` renders and re-reads results.
"""
