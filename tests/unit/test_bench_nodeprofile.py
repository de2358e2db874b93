"""bench.nodeprofile: the summary of an async-profiler collapsed profile of a node."""

from __future__ import annotations

from pathlib import Path

from bench.nodeprofile import summarize_java_collapsed

GET = ("java/lang/Thread.run;org/apache/ignite/internal/util/worker/GridWorker.run;"
       "org/apache/ignite/internal/processors/odbc/ClientListenerNioListener.onMessage;"
       "org/apache/ignite/internal/processors/platform/client/cache/ClientCacheGetRequest.process0;"
       "org/apache/ignite/internal/processors/cache/persistence/tree/BPlusTree.read;"
       "org/apache/ignite/internal/processors/cache/persistence/CacheDataRowAdapter.readFragment;"
       "jbyte_disjoint_arraycopy_avx3")
WRITE = ("java/lang/Thread.run;org/apache/ignite/internal/util/nio/GridNioServer$DirectNioClientWorker.processWrite;"
         "sun/nio/ch/IOUtil.write;__GI_write")
JIT = "start_thread;thread_native_entry;CompileBroker::compiler_thread_loop;C2Compiler::compile_method"


def test_areas_hot_frames_and_inclusive_shares(tmp_path: Path) -> None:
    path = tmp_path / "p.collapsed"
    path.write_text(f"{GET} 60\n{WRITE} 30\n{JIT} 10\n")
    text = summarize_java_collapsed(path)
    lines = text.splitlines()
    assert lines[0].startswith("100 samples (0.10 s of node CPU")
    areas = [line for line in lines if line.startswith("  ") and "[" in line]
    assert areas[0].split()[0] == "60.0%" and "cache get" in areas[0] and "jbyte_disjoint_arraycopy_avx3 100%" in areas[0]
    assert "socket write (NIO)" in areas[1] and "__GI_write 100%" in areas[1]
    assert "JIT compiler" in areas[2]
    inclusive = text.split("inclusive")[1]
    # The get chain (onMessage ... arraycopy, all 60%) shows once, by its innermost frame;
    # thread and pool wrappers never show.
    assert "60.0%  jbyte_disjoint_arraycopy_avx3" in inclusive
    assert "ClientCacheGetRequest.process0" not in inclusive
    assert "Thread.run" not in inclusive and "GridWorker.run" not in inclusive
    assert "30.0%  __GI_write" in inclusive


def test_empty_profile(tmp_path: Path) -> None:
    path = tmp_path / "p.collapsed"
    path.write_text("")
    assert summarize_java_collapsed(path) == "(no node samples)"
