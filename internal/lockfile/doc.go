// Package lockfile holds a folder or file for one process at a time: an
// exclusive advisory lock (flock(2) on Unix, LockFileEx on Windows) on a
// lock file, taken without waiting. The kernel drops the lock when the
// holding process exits, however it exits, so a process killed with
// SIGKILL never leaves a stale lock behind. The holder writes its pid,
// host, start time and command into the file, so that the process that is
// refused can say who holds it.
package lockfile
