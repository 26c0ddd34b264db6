package admin

import (
	"context"
	"time"

	"github.com/llmgw/gateway/models"
)

// Budget periods.
const (
	PeriodDaily   = "daily"
	PeriodWeekly  = "weekly"
	PeriodMonthly = "monthly"
	PeriodTotal   = "total"
)

var periods = []string{PeriodDaily, PeriodWeekly, PeriodMonthly, PeriodTotal}

// PeriodStart is the start of the budget period containing now, in UTC:
// the calendar day, the ISO week (from Monday), the month, or the zero time
// for "total".
func PeriodStart(period string, now time.Time) time.Time {
	now = now.UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	switch period {
	case PeriodDaily:
		return day
	case PeriodWeekly:
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		return day.AddDate(0, 0, -back)
	case PeriodMonthly:
		return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// storedSpend is the fallback SpendSource: recorded usage since the period start.
type storedSpend struct {
	usage *models.UsageStore
	now   func() time.Time
}

func (s storedSpend) CurrentSpend(ctx context.Context, scope, id, period string) (float64, error) {
	column := "key_id"
	if scope == "project" {
		column = "project_id"
	}
	spend, err := s.usage.SumCost(ctx, column, id, PeriodStart(period, s.now()))
	return roundUSD(spend), err
}
