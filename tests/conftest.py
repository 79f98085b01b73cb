import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
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
