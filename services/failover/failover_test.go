package failover

import (
	"context"
	"errors"
	"testing"
	"time"
)

var (
	errDown   = errors.New("connection refused")
	errAnswer = errors.New("denied")
)

func TestStateSwitchesOncePerChangeAndProbes(t *testing.T) {
	now := time.Unix(1000, 0)
	var changes []bool
	s := New(func(err error) bool { return err != errAnswer },
		func(up bool, _ error) { changes = append(changes, up) },
		func() time.Time { return now })

	if !s.Up() || !s.UseStore() {
		t.Fatal("a new state is up and uses the store")
	}
	if s.Observe(nil) || s.Observe(errAnswer) || !s.Up() {
		t.Fatal("success and answers keep it up")
	}
	if !s.Observe(errDown) || s.Up() {
		t.Fatal("an outage takes it down")
	}
	if s.Observe(context.Canceled) || s.Up() {
		t.Fatal("a cancelled caller says nothing about the store")
	}
	if s.UseStore() {
		t.Fatal("no probe right after going down")
	}
	now = now.Add(ProbeEvery)
	if !s.UseStore() || s.UseStore() {
		t.Fatal("exactly one probe per ProbeEvery")
	}
	s.Observe(errDown) // the probe failed: still down, no new change
	now = now.Add(ProbeEvery)
	if !s.UseStore() {
		t.Fatal("next probe a ProbeEvery later")
	}
	if s.Observe(nil) || !s.Up() || !s.UseStore() {
		t.Fatal("a successful probe brings it back")
	}
	if len(changes) != 2 || changes[0] || !changes[1] {
		t.Fatalf("onState calls %v, want [false true]", changes)
	}
}
