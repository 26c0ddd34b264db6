package admin

import (
	"regexp"
	"testing"
	"time"
)

func TestPeriodStart(t *testing.T) {
	now := time.Date(2026, 11, 22, 15, 4, 5, 0, time.FixedZone("x", -5*3600)) // Sunday 20:04 UTC
	cases := map[string]time.Time{
		PeriodDaily:   time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
		PeriodWeekly:  time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC), // ISO week starts Monday
		PeriodMonthly: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		PeriodTotal:   {},
	}
	for p, want := range cases {
		if got := PeriodStart(p, now); !got.Equal(want) {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
	monday := time.Date(2026, 11, 23, 0, 30, 0, 0, time.UTC)
	if got := PeriodStart(PeriodWeekly, monday); !got.Equal(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("monday: %v", got)
	}
}

func TestNewVirtualKey(t *testing.T) {
	re := regexp.MustCompile(`^sk-gw-[0-9A-Za-z]{40}$`)
	seen := map[string]bool{}
	counts := map[rune]int{}
	for i := 0; i < 2000; i++ {
		k, err := newVirtualKey()
		if err != nil || !re.MatchString(k) || seen[k] {
			t.Fatalf("%q %v", k, err)
		}
		seen[k] = true
		for _, r := range k[len(keyPrefix):] {
			counts[r]++
		}
	}
	// 80,000 characters over 62 symbols: each near 1290; a modulo bias or a
	// missing symbol would stand out.
	if len(counts) != 62 {
		t.Fatalf("%d distinct symbols", len(counts))
	}
	for r, n := range counts {
		if n < 1000 || n > 1600 {
			t.Errorf("symbol %q appears %d times", r, n)
		}
	}
}
