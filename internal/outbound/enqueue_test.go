package outbound_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/outbound"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/outbound/outstore/outstoretest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestDeliveryEnqueuedWithTheEmail: the delivery job is written in the
// transaction that creates the email, and neither exists if it rolls back.
func TestDeliveryEnqueuedWithTheEmail(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := outstore.NewStore(db, 0, nil)
		s.Now = outstoretest.NewClock().Now
		org, _ := outstoretest.Orgs(t, db)
		ctx := context.Background()
		q := jobs.New(db, nil, jobs.Options{})
		q.Register(outbound.DeliveryKind, func(context.Context, *jobs.Job) error { return nil }, jobs.Limits{})

		create := func(in outstore.NewEmail, fail error) (int64, error) {
			var jobID int64
			err := db.InTx(ctx, func(tx *store.Tx) error {
				em, err := s.Create(ctx, tx, in)
				if err != nil {
					return err
				}
				if jobID, err = outbound.EnqueueDelivery(ctx, q, tx, em.ID); err != nil {
					return err
				}
				return fail
			})
			return jobID, err
		}
		in := outstoretest.Message(org, "kept", outstoretest.Addrs(1)...)
		jobID, err := create(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		job, err := q.Get(ctx, jobID)
		if err != nil || job.Kind != outbound.DeliveryKind || job.State != jobs.Pending {
			t.Fatalf("job %+v %v", job, err)
		}
		var p outbound.DeliveryPayload
		if err := json.Unmarshal(job.Payload, &p); err != nil || p.OutboundID != in.ID || string(job.Payload) != `{"outbound_id":"`+in.ID+`"}` {
			t.Errorf("payload %s, want {\"outbound_id\":%q}", job.Payload, in.ID)
		}

		boom := errors.New("boom")
		rolled := outstoretest.Message(org, "rolled back", outstoretest.Addrs(1)...)
		if _, err := create(rolled, boom); !errors.Is(err, boom) {
			t.Fatalf("create: %v", err)
		}
		if _, err := s.ByID(ctx, rolled.ID); !errors.Is(err, outstore.ErrNotFound) {
			t.Errorf("the rolled back email: %v, want ErrNotFound", err)
		}
		counts, err := q.Counts(ctx)
		if err != nil || len(counts) != 1 || counts[0].Jobs != 1 {
			t.Errorf("jobs after a rollback: %+v %v, want the first one alone", counts, err)
		}
		if n, _ := s.Usage(ctx, org, outstoretest.Start); n != 1 {
			t.Errorf("usage after a rollback: %d, want 1", n)
		}
	})
}
