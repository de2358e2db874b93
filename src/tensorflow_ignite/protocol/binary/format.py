"""Layout constants of binary objects shared by the decoder and the encoders."""

from __future__ import annotations

import struct

#: Header after the type code and version byte: flags, type id, hash, length, schema id, schema offset.
OBJECT_HEADER = struct.Struct("<hiiiii")
HEADER_LEN = 24
