"""NDR and PDR search with MLRsearch (FD.io CSIT, draft-ietf-bmwg-mlrsearch).

``spec`` holds the goals and load range (pure), ``engine`` wraps the MLRsearch package
around any ``trial function`` (pure: it runs against a synthetic SUT in the tests),
``run`` puts it on the testbed and the store, ``view`` renders and re-reads results.
"""
