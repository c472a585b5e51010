"""Private synthetic data (chapter 08): MWEM for linear queries, tables from noisy marginals.

One job per module:

- :mod:`~dplib.synthesis.mwem` -- MWEM, multiplicative weights with the exponential mechanism
  (Hardt, Ligett & McSherry 2012): a synthetic histogram for a workload of linear queries;
- :mod:`~dplib.synthesis.marginals` -- select, measure, generate: a synthetic table fitted to
  a few noisy marginals (McKenna, Miklau & Sheldon 2021).
"""
