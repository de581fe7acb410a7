//! Sockets: UDP with batched syscalls, TCP per RFC 7766.
