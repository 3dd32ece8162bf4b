package web_test

import "testing"

// extraIsolationCases are the pages added after the inbox's: each page that
// names a resource adds its cases here.
func extraIsolationCases(t *testing.T, e *env) []isolationCase { return nil }
