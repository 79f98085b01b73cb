import os

from hypothesis import HealthCheck, settings

# The default draws the same examples on every run, so a red run is the code's
# doing and reproduces anywhere; "explore" draws fresh ones to look for new cases.
_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("default", max_examples=60, derandomize=True, **_common)
settings.register_profile("ci", max_examples=60, derandomize=True, **_common)
settings.register_profile("explore", max_examples=300, derandomize=False, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_addoption(parser):
    parser.addoption(
        "--fuzz",
        nargs="?",
        type=int,
        const=500,
        default=None,
        metavar="N",
        help="run the fuzz tests (marked 'fuzz') with N examples per target (default 500); "
        "without the flag they try a few each",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: mutated-input tests; longer with --fuzz[=N]")
