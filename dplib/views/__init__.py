"""Releases that answer many range queries at once (chapter 08): hierarchies and PrivTree.

One job per module:

- :mod:`~dplib.views.hierarchy` -- noisy counts on a tree: TopDown-style consistency for a
  geographic hierarchy, hierarchical histograms and range decompositions over an ordered domain;
- :mod:`~dplib.views.privtree` -- PrivTree, a data-aware partition of a grid of counts (Zhang,
  Xiao & Xie 2016), one of HDPView's baselines.
"""
