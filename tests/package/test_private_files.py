"""The namespace carried across a process replacement is written where only this user can write and read
back only from there: unpickling runs code, so a planted file must never be loaded. No GPU needed."""
import os
import stat

import pytest

import xcuda.recovery as xcuda_recovery


def test_the_pickle_is_written_0600_in_a_new_0700_folder_and_removed_after_reading():
    path = xcuda_recovery.write_private(b"payload")
    folder = os.path.dirname(path)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert xcuda_recovery.read_private(path) == b"payload"
    assert not os.path.exists(path) and not os.path.exists(folder)


def plant(how, tmp_path):
    path = xcuda_recovery.write_private(b"planted")
    folder = os.path.dirname(path)
    if how == "symlink":
        target = tmp_path / "real.pickle"
        target.write_bytes(b"planted")
        os.unlink(path)
        os.symlink(target, path)
    elif how == "hard link":
        os.link(path, tmp_path / "second-name")
    elif how == "writable by others":
        os.chmod(path, 0o666)
    elif how == "folder writable by others":
        os.chmod(folder, 0o777)
    elif how == "another owner":
        os.chown(path, 65534, 65534)
    return path


@pytest.mark.parametrize("how", ["symlink", "hard link", "writable by others", "folder writable by others",
                                 "another owner"])
def test_a_planted_or_shared_file_is_refused(tmp_path, how):
    if how == "another owner" and os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root (CI runs as root)")
    path = plant(how, tmp_path)
    with pytest.raises(OSError, match="not trusted|symbolic link"):
        xcuda_recovery.read_private(path)


def test_a_restore_from_an_untrusted_file_restores_nothing_and_says_why(tmp_path, capsys, monkeypatch):
    path = plant("writable by others", tmp_path)
    monkeypatch.setenv(xcuda_recovery.RESTORE_VARIABLE, path)
    assert xcuda_recovery.restore_if_requested(shell=None) is None
    assert "not restoring the variables" in capsys.readouterr().err
