"""Apache Ignite 3's client protocol without I/O: codes, MsgPack bodies, frames and the handshake,
binary tuples, SQL requests and answers, pages of rows as columns.

Needs the ``msgpack`` package (``pip install 'tensorflow-ignite[ignite3]'``).
"""
