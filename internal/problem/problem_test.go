package problem

import (
	"errors"
	"fmt"
	"testing"
)

func TestFieldsNameEveryField(t *testing.T) {
	var f Fields
	if f.Err() != nil {
		t.Fatal("no field collected must be no error")
	}
	f.Add("rules[0].stage", "must be one of mail, rcpt, data, after_data")
	f.AddCode("rules[1].delay_ms", "delay_too_long", "must be at most 60000")
	err := fmt.Errorf("setting rules: %w", f.Err())
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("Err() = %T, want *Error", f.Err())
	}
	if pe.Kind != Invalid || pe.Code != "invalid_parameter" || len(pe.Fields) != 2 {
		t.Fatalf("got kind %d code %q fields %d", pe.Kind, pe.Code, len(pe.Fields))
	}
	want := "rules[0].stage must be one of mail, rcpt, data, after_data; rules[1].delay_ms must be at most 60000"
	if pe.Message != want {
		t.Fatalf("message %q, want %q", pe.Message, want)
	}
}

func TestErrorf(t *testing.T) {
	e := Errorf(Conflict, "sms_number_inactive", "number %s is not active", "+15550001")
	if e.Kind != Conflict || e.Error() != "number +15550001 is not active" {
		t.Fatalf("got %+v", e)
	}
	if n := NotFoundf("email"); n.Kind != NotFound || n.Code != "not_found" || n.Message != "email not found" {
		t.Fatalf("got %+v", n)
	}
}
