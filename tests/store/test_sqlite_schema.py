"""SQLite backend: dsh schema 17 text, pragmas, verification on open, row codec (spec §4.1-§4.3)."""

from __future__ import annotations

import os
import re
import sqlite3

import pytest
import sqlite_utils
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.store import sqlite as sq
from tests.conftest import REPO

# dsh's schema-17 DDL, kept as a test data file (independent of the code's own statements)
SCHEMA_SQL = (REPO / "tests" / "fixtures" / "sqlite-schema-17.sql").read_text()


def _spec_statements() -> dict[str, str]:
    block = "\n".join(line for line in SCHEMA_SQL.splitlines() if not line.startswith("--"))
    out = {}
    for stmt in block.split(";"):
        stmt = stmt.strip()
        if stmt:
            name = re.match(r"CREATE TABLE (\w+)", stmt).group(1)
            out[name] = " ".join(stmt.split())
    return out


def test_created_schema_matches_the_spec_text(tmp_path):
    store = sq.SqliteSessionStore(tmp_path)
    store.close()
    db = sqlite_utils.Database(tmp_path / sq.DB_FILENAME)
    got = {
        name: " ".join(sql.split())
        for name, sql in db.execute(
            "SELECT name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'"
        ).fetchall()
    }
    assert got == _spec_statements()
    assert db.execute("PRAGMA application_id").fetchone()[0] == 0x44534850
    assert db.execute("PRAGMA user_version").fetchone()[0] == 17
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db["events"].pks == ["session_id", "seq"]
    (row,) = db["persistence_state"].rows
    assert row["singleton"] == 1 and len(row["store_id"]) == 36
    assert os.stat(tmp_path / sq.DB_FILENAME).st_mode & 0o777 == 0o600


def test_connection_settings_are_verified(tmp_path):
    conn = sq.connect(tmp_path / "x.sqlite")
    pragmas = {p: conn.execute(f"PRAGMA {p}").fetchone()[0] for p in
               ("trusted_schema", "mmap_size", "foreign_keys", "synchronous", "busy_timeout", "journal_mode")}
    assert pragmas == {"trusted_schema": 0, "mmap_size": 0, "foreign_keys": 1, "synchronous": 2,
                       "busy_timeout": 5000, "journal_mode": "wal"}
    conn.close()
    conn = sq.connect(tmp_path / "y.sqlite", journal_mode="delete")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()
    with pytest.raises(sq.SqliteStoreError, match="journal mode"):
        sq.connect(tmp_path / "z.sqlite", journal_mode="off")


def test_reopen_verifies_and_keeps_store_id(tmp_path):
    a = sq.SqliteSessionStore(tmp_path)
    sid = a.store_id
    a.close()
    b = sq.SqliteSessionStore(tmp_path)
    assert b.store_id == sid
    b.close()


@pytest.mark.parametrize(
    "damage, message",
    [
        ("ALTER TABLE sessions ADD COLUMN extra TEXT", "schema differs"),
        ("CREATE INDEX ix ON events(type)", "schema differs"),
        ("PRAGMA user_version = 16", "version 16 is older"),
        ("PRAGMA user_version = 18", "version 18 is newer"),
        ("PRAGMA application_id = 7", "application_id 7"),
    ],
)
def test_foreign_or_altered_databases_are_refused(tmp_path, damage, message):
    sq.SqliteSessionStore(tmp_path).close()
    raw = sqlite3.connect(tmp_path / sq.DB_FILENAME)
    raw.execute(damage)
    raw.commit()
    raw.close()
    with pytest.raises(sq.SqliteStoreError, match=message):
        sq.SqliteSessionStore(tmp_path)


def test_unversioned_database_with_objects_is_refused(tmp_path):
    path = tmp_path / sq.DB_FILENAME
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE notes (x)")
    raw.commit()
    raw.close()
    with pytest.raises(sq.SqliteStoreError, match="not a dsh session store"):
        sq.SqliteSessionStore(tmp_path)


def test_whitespace_differences_inside_a_statement_are_refused(tmp_path):
    path = tmp_path / sq.DB_FILENAME
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    raw = sqlite3.connect(path)
    for stmt in sq.SCHEMA_STATEMENTS:
        raw.execute(stmt.replace("CHECK (singleton = 1)", "CHECK(singleton=1)"))
    raw.execute(f"PRAGMA application_id = {sq.APPLICATION_ID}")
    raw.execute("PRAGMA user_version = 17")
    raw.execute("INSERT INTO persistence_state VALUES (1, 'x')")
    raw.commit()
    raw.close()
    with pytest.raises(sq.SqliteStoreError, match="changed"):
        sq.SqliteSessionStore(tmp_path)


def test_insecure_paths_are_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(sq.SqliteStoreError, match="world-writable"):
        sq.SqliteSessionStore(shared)
    ok = tmp_path / "ok"
    ok.mkdir(mode=0o700)
    sq.SqliteSessionStore(ok).close()
    os.chmod(ok / sq.DB_FILENAME, 0o644)
    with pytest.raises(sq.SqliteStoreError, match="group or others"):
        sq.SqliteSessionStore(ok)
    link = tmp_path / "link"
    link.mkdir(mode=0o700)
    os.symlink(ok / sq.DB_FILENAME, link / sq.DB_FILENAME)
    with pytest.raises(sq.SqliteStoreError, match="symlink"):
        sq.SqliteSessionStore(link)


# ------------------------------------------------------------------------------------------- codec


def test_source_event_seqs_varint_zigzag_example():
    assert sq.encode_seqs([19, 20, 4]) == bytes([0x13, 0x02, 0x1F])
    assert sq.decode_seqs(bytes([0x13, 0x02, 0x1F])) == [19, 20, 4]
    assert sq.encode_seqs([300]) == bytes([0xAC, 0x02])


@settings(deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**53 - 1), min_size=1, max_size=30, unique=True))
def test_source_event_seqs_round_trip(seqs):
    blob = sq.encode_seqs(seqs)
    assert sq.decode_seqs(blob) == seqs


@pytest.mark.parametrize("blob", [b"", b"\x80", b"\x80\x00", b"\x13\x82\x00", b"\xff" * 9 + b"\x01"])
def test_non_canonical_or_truncated_varints_are_rejected(blob):
    with pytest.raises(ValueError):
        sq.decode_seqs(blob)


def test_data_text_below_4k_zstd_blob_above_only_if_smaller():
    small = '{"a":"' + "x" * 100 + '"}'
    assert sq.encode_data(small) == small
    edge = '"' + "y" * 4093 + '"'  # 4095 bytes: still TEXT
    assert sq.encode_data(edge) == edge
    big = '"' + "z" * 5000 + '"'
    blob = sq.encode_data(big)
    assert isinstance(blob, bytes) and blob[:4] == b"\x28\xb5\x2f\xfd" and len(blob) < len(big)
    rnd = os.urandom(4000).hex()
    assert sq.decode_data(blob) == "z" * 5000
    assert sq.decode_data(sq.encode_data('"' + rnd + '"')) == rnd
