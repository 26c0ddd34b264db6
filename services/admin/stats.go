package admin

import (
	"context"
	"math"
	"time"

	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/validate"
)

// StatsParams are the raw query parameters of GET /admin/usage/stats.
type StatsParams struct {
	StartDate, EndDate string // YYYY-MM-DD, inclusive, UTC
	GroupBy            string // hour | day | provider | model | key
	KeyID, ProjectID   string
	Provider, Model    string
}

// Stats is the usage statistics response.
type Stats struct {
	StartDate string              `json:"start_date"`
	EndDate   string              `json:"end_date"`
	GroupBy   string              `json:"group_by"`
	Data      []models.StatsRow   `json:"data"`
	Totals    models.StatsFigures `json:"totals"`
}

const dateLayout = "2006-01-02"

// statsDefaultDays is the default range: today and the six days before.
const statsDefaultDays = 7

var groupings = map[string]models.StatsGroup{
	"hour": models.GroupHour, "day": models.GroupDay, "provider": models.GroupProvider,
	"model": models.GroupModel, "key": models.GroupKey,
}

// UsageStats aggregates usage records in the database.
func (s *Service) UsageStats(ctx context.Context, p StatsParams) (*Stats, error) {
	var f fieldCheck
	now := s.now().UTC()
	end := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	start := end.AddDate(0, 0, -(statsDefaultDays - 1))
	startSet := false
	if p.StartDate != "" {
		t, err := time.Parse(dateLayout, p.StartDate)
		if err != nil {
			f.add("start_date", "must be a date in the form YYYY-MM-DD")
		} else {
			start, startSet = t, true
		}
	}
	if p.EndDate != "" {
		t, err := time.Parse(dateLayout, p.EndDate)
		if err != nil {
			f.add("end_date", "must be a date in the form YYYY-MM-DD")
		} else {
			end = t
			if !startSet { // only an end given: the 7 days up to it
				start = end.AddDate(0, 0, -(statsDefaultDays - 1))
			}
		}
	}
	group := p.GroupBy
	if group == "" {
		group = "day"
	}
	g, ok := groupings[group]
	if !ok {
		f.add("group_by", "must be one of: hour day provider model key")
	}
	if len(f) == 0 && start.After(end) {
		return nil, apierr.InvalidRequest("start_date must not be after end_date.",
			apierr.FieldError{Field: "start_date", Reason: "must not be after end_date"})
	}
	if err := validate.Fields(f); err != nil {
		return nil, err
	}
	res, err := s.st.Usage.Stats(ctx, models.StatsQuery{
		Start: start, End: end.AddDate(0, 0, 1), GroupBy: g,
		KeyID: p.KeyID, ProjectID: p.ProjectID, Provider: p.Provider, Model: p.Model,
	})
	if err != nil {
		return nil, err
	}
	for i := range res.Rows {
		roundFigures(&res.Rows[i].StatsFigures)
	}
	roundFigures(&res.Totals)
	return &Stats{
		StartDate: start.Format(dateLayout), EndDate: end.Format(dateLayout), GroupBy: group,
		Data: res.Rows, Totals: res.Totals,
	}, nil
}

// roundFigures drops the binary floating-point noise of SQL sums
// (0.012299999999999998): cost to the nano-dollar, the unit budgets count
// in, and average latency to the microsecond.
func roundFigures(f *models.StatsFigures) {
	f.Cost = roundUSD(f.Cost)
	f.AvgLatencyMS = math.Round(f.AvgLatencyMS*1e3) / 1e3
}

// roundUSD rounds an amount of dollars to the nano-dollar.
func roundUSD(x float64) float64 { return math.Round(x*1e9) / 1e9 }
