# SPDX-License-Identifier: GPL-2.0
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(REPO, "target/release/scx_fairquota")


# The tests this session runs (after -k and -m): tests/test_vm.py boots
# one VM for the scenarios of all selected tests of a batch.
SELECTED = []


def pytest_collection_finish(session):
    SELECTED[:] = session.items


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "large: a VM test too slow for CI's 90 minutes on a slow host "
        "(scripts/test.sh runs it with TEST_MARKERS=large or TEST_MARKERS=)")


@pytest.fixture(scope="session")
def binary():
    assert os.access(BIN, os.X_OK), f"{BIN} is missing: build it with cargo build --release"
    return BIN
