// Package gateway orchestrates one model call: plan → attempts (retries,
// fallbacks, provider limits, circuit state) → provider client → response or
// events → what usage and billing need. It knows nothing of HTTP servers.
package gateway

import (
	"time"

	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/services/catalog"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/routing"
)

// Call is one model call as it progresses. The request path creates it, the
// service fills in the outcome, and accounting (usage record, rate-limit and
// budget settlement) reads it afterwards.
type Call struct {
	RequestID string
	Key       *catalog.Key
	Request   *llm.Request
	Plan      *routing.Plan
	Started   time.Time
	// EstimatedTokens is what limits reserved before the call.
	EstimatedTokens int64

	// Outcome.
	Provider      string // provider name that served (or was last tried)
	UpstreamModel string
	Usage         llm.Usage
	UsageKnown    bool // the upstream reported usage (else estimated)
	Attempts      int
	Streamed      bool // at least one byte of a stream reached the client
	Status        int
	ErrorType     string
}

// Cost is the price of the call from the plan's prices.
func (c *Call) Cost() float64 {
	if c.Plan == nil {
		return 0
	}
	return Cost(c.Usage, c.Plan.InputPricePer1K, c.Plan.OutputPricePer1K)
}

// Cost prices usage: prompt tokens (cache included) at the input price.
func Cost(u llm.Usage, inPer1K, outPer1K float64) float64 {
	return float64(u.PromptTokens())/1000*inPer1K + float64(u.OutputTokens)/1000*outPer1K
}

// EstimatePromptTokens approximates the prompt's token count (4 characters a
// token, plus a small per-message overhead) for reservations before the call;
// the upstream's real usage replaces it afterwards.
func EstimatePromptTokens(r *llm.Request) int64 {
	chars := len(r.System)
	n := 0
	for _, m := range r.Messages {
		n++
		chars += blockChars(m.Content)
	}
	for _, t := range r.Tools {
		chars += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return int64(chars/4 + 4*n + 1)
}

func blockChars(bs []llm.Block) int {
	c := 0
	for i := range bs {
		b := &bs[i]
		c += len(b.Text) + len(b.ToolInput) + len(b.ToolName) + blockChars(b.Content)
		if b.Type == llm.BlockImage {
			c += 1000 // images cost tokens the text length does not show
		}
	}
	return c
}

// EstimateTotalTokens is the reservation: prompt estimate plus the output cap.
func EstimateTotalTokens(r *llm.Request, defaultOutput int) int64 {
	out := defaultOutput
	if r.MaxTokens != nil {
		out = *r.MaxTokens
	}
	return EstimatePromptTokens(r) + int64(out)
}

// estimateOutputTokens bills a cut stream from what was received.
func estimateOutputTokens(chars int) int {
	if chars == 0 {
		return 0
	}
	return (chars + 3) / 4
}

// Record is the usage record of the call, written after it ended.
func (c *Call) Record(end time.Time) models.UsageRecord {
	r := models.UsageRecord{
		RequestID:     c.RequestID,
		Provider:      c.Provider,
		UpstreamModel: c.UpstreamModel,
		InputTokens:   c.Usage.PromptTokens(),
		OutputTokens:  c.Usage.OutputTokens,
		TotalTokens:   c.Usage.TotalTokens(),
		Cost:          c.Cost(),
		LatencyMS:     end.Sub(c.Started).Milliseconds(),
		Status:        c.Status,
		ErrorType:     c.ErrorType,
		Attempts:      c.Attempts,
		CreatedAt:     c.Started.UTC(),
	}
	if c.Key != nil {
		r.KeyID, r.ProjectID = c.Key.ID, c.Key.ProjectID
	}
	if c.Request != nil {
		r.Model, r.Stream = c.Request.Model, c.Request.Stream
	}
	return r
}
