"""Engines: where ops meet live Delta tables. Spark, Sail and delta-rs are imported only in this package."""

import os

# Seconds a statement that lost a commit race to a concurrent writer is run again for (`engine.retry`). Here,
# where importing it costs nothing, for the CLI's `--help`.
DEFAULT_CONFLICT_PATIENCE = 300.0

GRPC_FORK_SUPPORT = "GRPC_ENABLE_FORK_SUPPORT"


def without_grpc_fork_handlers() -> None:
    """Run when this package is imported, which every engine's module does before it imports PySpark.

    grpcio >= 1.81 restarts its poller in a forked child; Python closes the child's descriptors before exec,
    the poller meets EBADF and aborts the child (grpc/grpc#43055). PySpark starts its JVM with
    `Popen(preexec_fn=...)`, a fork that runs those handlers, so with a Connect client in the process (the
    local engine's Sail session, the connect engine) about one JVM start in eight died before exec
    (JAVA_GATEWAY_EXITED). gRPC reads the variable when it is imported, so it must be set before anything
    imports `grpc`; a process that imported it earlier is covered by `spark.session._get_or_create`, which
    starts the JVM again. Nothing here forks to run gRPC in a child, so the handlers are off, unless the user
    set the variable."""
    os.environ.setdefault(GRPC_FORK_SUPPORT, "false")


without_grpc_fork_handlers()
