// Package systemtest holds black-box tests of the catchbox binary as operators
// run it: built once, started as separate processes on loopback ports, killed
// with SIGKILL, restarted on the same data, run as several replicas on one
// PostgreSQL database, and kept running while PostgreSQL itself stops and
// starts. The tests speak only SMTP and HTTP to the service; they look into the
// database directly only to prove what the API cannot show (no half-stored
// message, how many rows the reaper deleted).
//
// The tests take tens of seconds and are skipped with -short. The crash test
// runs on SQLite, and on PostgreSQL too when CATCHBOX_TEST_POSTGRES_URL is set;
// the multi-replica test needs that variable. The database restart test needs
// the PostgreSQL server binaries (initdb, postgres) under /usr/lib/postgresql
// instead: it starts a private cluster of its own, so that it can stop and
// start it without disturbing the shared server other tests use.
//
// docs/operations.md describes the behaviour these tests pin down.
package systemtest
