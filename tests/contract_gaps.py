"""Public names that break the library-wide contract today (tests/test_contract.py).

The work left for issue 9. Each entry: the shortest reproducing call the contract test found and
what goes wrong (the number of breaches found across all perturbations in brackets; run
``python tests/test_contract.py NAME`` to list them all). The test fails when a name not listed
here breaks the contract, and when a listed name no longer does: delete its entry when you fix it,
so that this list only shrinks.
"""

KNOWN_GAPS: dict[str, str] = {
    'DPNaiveBayes': (
        '[54] DPNaiveBayes(1.0, 0, [0, 1], random_state=0).fit(<array shape (40, 2)>, <array '
        'shape (40,)>): TypeError does not name \'bounds\': "object of type \'int\' has no len()"'
    ),
    'DPSGDClassifier': (
        '[54] DPSGDClassifier(5.0, 1e-05, batch_size=20, epochs=1000000000, classes=[0, 1], '
        'noise_multiplier=1.0, random_state=0).fit(<array shape (40, 2)>, <array shape (40,)>):'
        ' does not return within 10 s'
    ),
    'PrivacyAccountant': (
        "[7] PrivacyAccountant(1.0, 1e-05).spend(0.5, 1e-06, label=float('nan')): returns a "
        'non-finite value: result[0]._ledger[0].label = nan'
    ),
    'audit_mechanism': (
        '[35] audit_mechanism(_laplace_unit, 0.0, 1.0, 1.0, n_samples=1000000000, '
        'vectorized=True, rng=0): does not return within 2 s'
    ),
    'audit_training_one_run': (
        '[27] audit_training_one_run(0, <array shape (40, 2)>, <array shape (40,)>, <array '
        'shape (8, 2)>, <array shape (8,)>, k_pos=2, k_neg=2, rng=0): raises AttributeError: '
        "'int' object has no attribute 'fit'"
    ),
    'clip_gradients': (
        '[25] clip_gradients(0, 1.0): TypeError does not name \'per_example_grads\': "\'int\' '
        'object is not iterable"'
    ),
    'exponential_utility_bound': (
        '[2] exponential_utility_bound(10, 1e+308, 1.0, 0.05): returns a non-finite value: '
        'result = inf'
    ),
    'loss_threshold_attack': (
        "[25] loss_threshold_attack([]): ValueError does not name 'model_or_losses': 'losses "
        "must not be empty'"
    ),
    'noisy_gradient': (
        '[21] noisy_gradient(0, 1.0, 1.0, 3.0, rng=0): TypeError does not name '
        '\'per_example_grads\': "\'int\' object is not iterable"'
    ),
    'per_example_gradients': (
        "[6] per_example_gradients(<params>, <array shape (5, 2)>, <array shape (5,)>, "
        "activation=np.array([nan, 1.0])): ValueError does not name 'activation': 'The truth "
        "value of an array with more than one element is ambiguous. Use a.any() or a.all()'"
    ),
    'pld_epsilon_subsampled_gaussian': (
        '[4] pld_epsilon_subsampled_gaussian(0.01, 1.0, 100, 5e-324): returns a non-finite '
        'value: result = inf'
    ),
    'private_histogram': (
        '[30] private_histogram([0.1, 0.5, 0.9], 1180591620717411303424, 1.0, range=(0.0, 1.0),'
        " rng=0): ValueError does not name 'bins': 'Maximum allowed size exceeded'"
    ),
    'private_median': (
        '[4] private_median([0.1, 0.4, 0.8], 0.0, 1.0, 1.0, rng=0, '
        'size=1180591620717411303424): raises OverflowError: Python int too large to convert to'
        ' C long'
    ),
    'private_mode': (
        '[2] private_mode([0, 1, 1, 2], 1180591620717411303424, 1.0, rng=0): raises '
        'OverflowError: Python int too large to convert to C long'
    ),
    'rdp_to_dp': (
        '[6] rdp_to_dp([2.0, 4.0, 8.0], [0.5, 1.0, 2.0], 1e-05, method=np.array([nan, 1.0])): '
        "ValueError does not name 'method': 'The truth value of an array with more than one "
        "element is ambiguous. Use a.any() or a.all()'"
    ),
    'sequential_composition': (
        '[1] sequential_composition(np.array([1e+308, 1e+308]), [1e-06, 1e-06]): raises '
        'OverflowError: intermediate overflow in fsum'
    ),
    'zcdp_to_dp': (
        '[8] zcdp_to_dp(0.5, 5e-324): returns a non-finite value: result = inf'
    ),
}
