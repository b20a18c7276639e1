# SPDX-License-Identifier: GPL-2.0
"""The host install path: scripts/install.sh staged into a directory (as a
packager would), the systemd unit checked by `systemd-analyze verify`,
and the uninstall. The VM test test_systemd_unit_way runs the daemon the
way the unit does."""
import os
import subprocess

from conftest import REPO

INSTALL = os.path.join(REPO, "scripts/install.sh")


def install(stage, *args):
    p = subprocess.run([INSTALL, "--destdir", str(stage), "--no-build", *args],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p


def verify(unit_text, tmp_path, name="scx_fairquota.service"):
    path = tmp_path / "verify" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(unit_text)
    p = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, (p.stdout + p.stderr).strip()


def test_install_verify_uninstall(binary, tmp_path):
    stage = tmp_path / "stage"
    install(stage, "--prefix", "/opt/fq")
    bin_path = stage / "opt/fq/bin/scx_fairquota"
    unit = stage / "etc/systemd/system/scx_fairquota.service"
    defaults = stage / "etc/default/scx_fairquota"
    assert os.access(bin_path, os.X_OK)
    assert (stage / "opt/fq/share/doc/scx_fairquota/operations.md").is_file()
    text = unit.read_text()
    assert "ExecStart=/opt/fq/bin/scx_fairquota $SCX_FAIRQUOTA_FLAGS" in text
    assert "EnvironmentFile=-/etc/default/scx_fairquota" in text
    assert 'SCX_FAIRQUOTA_FLAGS="' in defaults.read_text()

    # systemd's own check of the unit, with ExecStart at the staged binary:
    # no warning at all. A broken copy shows the check can fail.
    staged = text.replace("ExecStart=/opt/fq/bin/", f"ExecStart={bin_path.parent}/")
    rc, out = verify(staged, tmp_path)
    assert (rc, out) == (0, ""), out
    rc, out = verify(staged.replace("KillSignal=SIGINT", "KillSignal=SIGBOGUS"), tmp_path, "broken.service")
    assert "SIGBOGUS" in out, out

    # A reinstall keeps the host's configuration.
    defaults.write_text('SCX_FAIRQUOTA_FLAGS="--quota-us 3000"\n')
    p = install(stage, "--prefix", "/opt/fq")
    assert "keeping the existing" in p.stdout
    assert "--quota-us 3000" in defaults.read_text()

    install(stage, "--prefix", "/opt/fq", "--uninstall")
    assert not bin_path.exists() and not unit.exists()
    assert defaults.exists()
    install(stage, "--prefix", "/opt/fq", "--uninstall", "--purge")
    assert not defaults.exists()


def test_install_bad_options(tmp_path):
    for args, msg in [(["--prefix", "rel/dir"], "--prefix must be an absolute path"),
                      (["--bogus"], "unknown option '--bogus'")]:
        p = subprocess.run([INSTALL, "--destdir", str(tmp_path), *args],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and msg in p.stderr, p.stderr
