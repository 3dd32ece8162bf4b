package webhook_test

import (
	"slices"
	"testing"

	"github.com/catchbox/catchbox/internal/deliverability"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/totp"
	"github.com/catchbox/catchbox/internal/webhook"
)

// The domain packages name the events they emit themselves (they do not
// import webhook); every name is one an endpoint may subscribe to, and every
// type an endpoint may subscribe to is emitted by one of them.
func TestEmittedTypesAreTheSubscribableOnes(t *testing.T) {
	emitted := []string{inbox.EventReceived, sms.EventReceived, outstore.EventRecorded, outstore.EventStatusChanged,
		deliverability.EventCompleted, totp.EventExpired}
	for _, typ := range emitted {
		if !slices.Contains(webhook.EventTypes, typ) {
			t.Errorf("%q is emitted but not in webhook.EventTypes", typ)
		}
	}
	for _, typ := range webhook.EventTypes {
		if !slices.Contains(emitted, typ) {
			t.Errorf("%q may be subscribed to but no package emits it", typ)
		}
	}
	if w := []string{webhook.EmailReceived, webhook.SMSReceived, webhook.OutboundEvent, webhook.OutboundStatus,
		webhook.DeliverabilityCompleted, webhook.DeviceExpired}; !slices.Equal(w, emitted) {
		t.Errorf("webhook's names %v, the emitters' %v", w, emitted)
	}
}
