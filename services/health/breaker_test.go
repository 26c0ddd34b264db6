package health

import (
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newTracker(c *fakeClock) *Tracker {
	return New(Options{FailureThreshold: 3, ErrorRateThreshold: 0.5, MinRequests: 10, Window: time.Minute, Cooldown: 10 * time.Second}, c.now, nil)
}

func TestConsecutiveFailuresOpenThenProbeCloses(t *testing.T) {
	c := &fakeClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	tr := newTracker(c)
	for i := 0; i < 2; i++ {
		tr.Record("p", false)
	}
	if !tr.Allow("p") || tr.State("p", true) != Degraded {
		t.Fatalf("two failures must not open the circuit; state %s", tr.State("p", true))
	}
	tr.Record("p", false)
	if tr.Allow("p") {
		t.Fatal("third consecutive failure must open the circuit")
	}
	if got := tr.State("p", true); got != Unhealthy {
		t.Fatalf("state = %s, want unhealthy", got)
	}
	c.add(9 * time.Second)
	if tr.Allow("p") {
		t.Fatal("circuit must stay open during the cool-down")
	}
	c.add(time.Second)
	if !tr.Allow("p") {
		t.Fatal("after the cool-down one probe must pass")
	}
	if tr.Allow("p") {
		t.Fatal("only one probe at a time while half-open")
	}
	if got := tr.State("p", true); got != Degraded {
		t.Fatalf("half-open state = %s, want degraded", got)
	}
	tr.Record("p", true)
	if !tr.Allow("p") || tr.State("p", true) != Healthy {
		t.Fatalf("a successful probe must close the circuit; state %s", tr.State("p", true))
	}
}

func TestFailedProbeReopens(t *testing.T) {
	c := &fakeClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	tr := newTracker(c)
	for i := 0; i < 3; i++ {
		tr.Record("p", false)
	}
	c.add(10 * time.Second)
	if !tr.Allow("p") {
		t.Fatal("probe must pass")
	}
	tr.Record("p", false)
	if tr.Allow("p") {
		t.Fatal("a failed probe must reopen the circuit")
	}
	c.add(10 * time.Second)
	if !tr.Allow("p") {
		t.Fatal("the cool-down restarts from the failed probe")
	}
}

func TestErrorRateOpens(t *testing.T) {
	c := &fakeClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	tr := newTracker(c)
	// Alternate so consecutive failures never reach 3; 5 of 10 fail = 50%.
	for i := 0; i < 10; i++ {
		tr.Record("p", i%2 == 0)
		c.add(time.Second)
	}
	if tr.Allow("p") {
		t.Fatal("an error rate at the threshold over min requests must open the circuit")
	}
}

func TestOldFailuresLeaveTheWindow(t *testing.T) {
	c := &fakeClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	tr := newTracker(c)
	for i := 0; i < 4; i++ {
		tr.Record("p", i%2 == 0)
	}
	c.add(2 * time.Minute)
	for i := 0; i < 9; i++ {
		tr.Record("p", true)
	}
	tr.Record("p", false)
	if !tr.Allow("p") {
		t.Fatal("failures older than the window must not count")
	}
}

func TestDisabledAndUnknown(t *testing.T) {
	tr := New(Options{}, nil, nil)
	if tr.State("x", false) != Disabled || tr.State("x", true) != Healthy {
		t.Fatal("disabled providers report disabled; unseen ones healthy")
	}
}
