# SPDX-License-Identifier: GPL-2.0
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(REPO, "target/release/scx_fairquota")


@pytest.fixture(scope="session")
def binary():
    assert os.access(BIN, os.X_OK), f"{BIN} is missing: build it with cargo build --release"
    return BIN
