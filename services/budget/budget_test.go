package budget

import (
	"math"
	"testing"
	"time"
)

func TestPeriods(t *testing.T) {
	d := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name       string
		p          Period
		now        string
		start, end string // "" = zero time
	}{
		{"daily", Daily, "2026-03-04T15:04:05Z", "2026-03-04T00:00:00Z", "2026-03-05T00:00:00Z"},
		{"daily at midnight", Daily, "2026-03-04T00:00:00Z", "2026-03-04T00:00:00Z", "2026-03-05T00:00:00Z"},
		{"daily last nanosecond", Daily, "2026-03-04T23:59:59.999999999Z", "2026-03-04T00:00:00Z", "2026-03-05T00:00:00Z"},
		{"daily in another zone is UTC", Daily, "2026-03-04T23:30:00-05:00", "2026-03-05T00:00:00Z", "2026-03-06T00:00:00Z"},
		{"daily year end", Daily, "2026-12-31T12:00:00Z", "2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"weekly Wednesday", Weekly, "2026-03-04T12:00:00Z", "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"},
		{"weekly Monday 00:00", Weekly, "2026-03-02T00:00:00Z", "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"},
		{"weekly Sunday is the previous Monday's week", Weekly, "2026-03-08T23:59:59Z", "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"},
		{"weekly across the year", Weekly, "2027-01-01T08:00:00Z", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z"},
		{"weekly across a month", Weekly, "2026-03-01T10:00:00Z", "2026-02-23T00:00:00Z", "2026-03-02T00:00:00Z"},
		{"monthly", Monthly, "2026-03-31T23:59:59Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
		{"monthly February leap year", Monthly, "2028-02-29T12:00:00Z", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"},
		{"monthly December", Monthly, "2026-12-15T00:00:00Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"total", Total, "2026-03-04T12:00:00Z", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := d(tt.now)
			var start, end time.Time
			if tt.start != "" {
				start, end = d(tt.start), d(tt.end)
			}
			if got := PeriodStart(tt.p, now); !got.Equal(start) || (!got.IsZero() && got.Location() != time.UTC) {
				t.Errorf("start %v, want %v", got, start)
			}
			if got := PeriodEnd(tt.p, now); !got.Equal(end) {
				t.Errorf("end %v, want %v", got, end)
			}
		})
	}
}

func TestCost(t *testing.T) {
	tests := []struct {
		in, out   int
		inP, outP float64
		want      float64
	}{
		{1000, 1000, 0.01, 0.03, 0.04},
		{1500, 500, 0.002, 0.006, 0.006},
		{0, 0, 1, 1, 0},
		{123, 0, 0, 5, 0},
	}
	for _, tt := range tests {
		if got := Cost(tt.in, tt.out, tt.inP, tt.outP); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Cost(%d,%d,%v,%v) = %v, want %v", tt.in, tt.out, tt.inP, tt.outP, got, tt.want)
		}
	}
}

func TestMemoryTracker(t *testing.T) {
	runSuite(t, func(t *testing.T, load SpendLoader, clock func() time.Time) Tracker {
		return NewMemory(load, clock)
	})
}
