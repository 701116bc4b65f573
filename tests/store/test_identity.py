"""Team memory identity: clones of one repository meet; the URL is checked for secrets."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from topicforest.store.identity import normalize_remote, repository_identity
from topicforest.store.postgres_address import check_url


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Org/Repo.git",
        "https://github.com/Org/Repo",
        "https://github.com/Org/Repo.git/",
        "ssh://git@GitHub.com:22/Org/Repo.git",
        "https://someone:s3cret-token@github.com/Org/Repo",
        "git+ssh://git@github.com/Org/Repo",
    ],
)
def test_the_ways_of_writing_one_remote_meet(url: str) -> None:
    assert normalize_remote(url) == "github.com/Org/Repo"


def test_different_repositories_stay_apart() -> None:
    assert normalize_remote("git@github.com:org/one.git") != normalize_remote(
        "git@github.com:org/two.git"
    )
    assert normalize_remote("git@gitlab.com:org/one.git") != normalize_remote(
        "git@github.com:org/one.git"
    )


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def test_two_clones_share_an_identity_a_plain_folder_is_its_path(tmp_path: Path) -> None:
    one, two, plain = tmp_path / "laptop", tmp_path / "devbox", tmp_path / "plain"
    for folder in (one, two, plain):
        folder.mkdir()
        git(folder, "init", "-q")
    git(one, "remote", "add", "origin", "git@github.com:org/app.git")
    git(two, "remote", "add", "upstream", "https://github.com/org/app")
    assert repository_identity(one) == repository_identity(two) == "github.com/org/app"
    assert repository_identity(plain) == str(plain.resolve())
    assert repository_identity(None) == "<global>"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("postgresql://ann:hunter2@db.example.com/memory", "password"),
        ("postgresql://ann@db.example.com/memory?password=hunter2", "password"),
        ("mysql://ann@db.example.com/memory", "postgresql://"),
        ("postgresql://ann@db.example.com", "name a database"),
    ],
)
def test_store_urls_with_a_password_or_no_database_are_refused(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        check_url(url)


def test_a_good_store_url_is_accepted() -> None:
    url = "postgresql://ann@db.example.com:5432/memory?sslmode=verify-full"
    assert check_url(url) == url
