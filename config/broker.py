"""kombu's filesystem transport, with messages that appear whole.

kombu (5.x) writes a message straight into the queue folder: it creates the file, then
locks it and writes. A worker polling the folder in between moves the empty file away,
reads nothing and dies on the JSON decode ("Expecting value: line 1 column 1"), which took
down the development server's worker and the SQLite test pass's. Here a message is written
under a name the worker does not read (`…msg.part`) and renamed into place, atomically on
the same file system, once it is complete. Reading is kombu's own.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Put `payload` onto `queue`: written whole, then renamed into the queue."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = f"{final}.part"
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
