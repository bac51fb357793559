"""The embedded broker's messages appear whole (config/broker.py): a message being written
is invisible to a worker polling the queue folder, which used to read it empty and die."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection

from config.broker import Transport


@pytest.fixture
def channel(tmp_path: Path):
    folder = tmp_path / "queue"
    folder.mkdir()
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder)}
    with Connection("filesystem://localhost//", transport=Transport,
                    transport_options=options) as connection:  # fmt: skip
        yield connection.default_channel, folder


def test_a_message_being_written_is_not_read(channel):
    ch, folder = channel
    (folder / "1_half.tasks.msg.part").write_bytes(b'{"body": "unfin')  # a writer mid-way
    with pytest.raises(Empty):
        ch._get("tasks")
    assert (folder / "1_half.tasks.msg.part").exists()  # left for its writer to finish


def test_messages_put_while_a_reader_polls_all_arrive_whole(channel):
    ch, _ = channel
    body = "x" * 200_000  # large enough that a write takes several system calls
    count = 60
    received: list[dict] = []

    def read() -> None:
        while len(received) < count:
            with contextlib.suppress(Empty):  # nothing yet
                received.append(ch._get("tasks"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    for n in range(count):
        ch._put("tasks", {"n": n, "body": body})
    reader.join(timeout=60)
    assert sorted(m["n"] for m in received) == list(range(count))
    assert all(m["body"] == body for m in received)
