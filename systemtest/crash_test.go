package systemtest

import (
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// TestCrashUnderLoad kills the server with SIGKILL while eight SMTP connections
// send continuously, restarts it on the same store, and checks that every
// message answered 250 is stored and searchable with its attachment, and that
// no message is half stored. Messages that got an error or no reply may or may
// not be there.
//
// A killed process's writes stay in the kernel's page cache, so on SQLite this
// proves recovery and atomicity, not that the WAL was fsynced before the 250:
// it passes with the fsync removed. inbox.TestAcknowledgedMailIsInTheSyncedWAL
// proves that.
func TestCrashUnderLoad(t *testing.T) {
	skipShort(t)
	cases := []struct {
		name    string
		dialect store.Dialect
		// afterWALRestart kills the server just after it has started its
		// SQLite WAL over from the first frame, so that the file then holds
		// the newest frames at its start and older ones further on.
		afterWALRestart bool
	}{
		{"sqlite", store.SQLite, false},
		{"sqlite-after-wal-restart", store.SQLite, true},
		{"postgres", store.Postgres, false},
	}
	for _, c := range cases {
		d := c.dialect
		t.Run(c.name, func(t *testing.T) {
			dataDir := t.TempDir()
			env := map[string]string{"CATCHBOX_DATA_DIR": dataDir}
			dbURL := storetest.URL(t, d) // skips the PostgreSQL run without a server
			env["CATCHBOX_DATABASE_URL"] = dbURL

			first := startServer(t, "catchbox (before the crash)", env)
			addrs := make([]string, 8)
			for i := range addrs {
				addrs[i] = first.SMTP
			}
			max := 2000
			if c.afterWALRestart {
				max = 20000
			}
			l := startLoad(t, "crash", addrs, max)
			// Kill somewhere in the middle of the load: after enough
			// acknowledgements that commits are in flight on every connection.
			if !testkit.Eventually(testkit.Patience, func() bool { return l.ackedCount() >= 150 }) {
				l.stop()
				t.Fatalf("the load did not reach 150 acknowledged messages: %s", summarize(l.results()))
			}
			if c.afterWALRestart {
				dbPath := strings.TrimPrefix(dbURL, "sqlite://")
				var peak uint32
				// Sampled every 5 ms: the peak must be seen before it passes.
				restarted := testkit.EventuallyEvery(2*time.Minute, 5*time.Millisecond, func() bool {
					n, ok := store.SQLiteWALFrames(dbPath)
					if ok && n > peak {
						peak = n
					}
					return ok && peak > 1000 && n < peak/2 && n > 0
				})
				if !restarted {
					l.stop()
					t.Fatalf("the WAL did not restart under load (peak %d frames): %s", peak, summarize(l.results()))
				}
			}
			first.kill()
			l.stop()
			as := l.results()
			t.Logf("load before SIGKILL: %s", summarize(as))

			second := startServer(t, "catchbox (after the restart)", env)
			verifyAcked(t, second.HTTP, as)
			got := checkIntegrity(t, dbURL)
			s := summarize(as)
			t.Logf("after the restart: %d emails (%d attachments) stored; %d acknowledged, %d tried without a 250",
				got.Emails, got.Attachments, s.Acked, s.Rejected+s.NoReply)
			if got.Emails < s.Acked {
				t.Errorf("%d emails stored, fewer than the %d acknowledged", got.Emails, s.Acked)
			}
			if got.Emails > len(as) {
				t.Errorf("%d emails stored, more than the %d messages sent", got.Emails, len(as))
			}
		})
	}
}
