package outbound_test

import "github.com/catchbox/catchbox/internal/outbound/outstore/outstoretest"

// The shared test fixtures, under the names the tests use.
var (
	start   = outstoretest.Start
	message = outstoretest.Message
	to      = outstoretest.To
)
