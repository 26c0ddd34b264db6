package middleware

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/services/budget"
	"github.com/llmgw/gateway/services/catalog"
	"github.com/llmgw/gateway/services/gateway"
	"github.com/llmgw/gateway/services/llm"
)

// Budget reserves the call's estimated cost against the key's and its
// project's budgets (402 when either would pass its limit) and settles the
// real cost afterwards, exactly once per request id.
func Budget(t budget.Tracker, cat *catalog.Catalog, defaultOutputTokens int) gin.HandlerFunc {
	return func(c *gin.Context) {
		call := Call(c)
		key := call.Key
		scopes := make([]budget.Scope, 0, 2)
		scopes = append(scopes, budget.Scope{Kind: "key", ID: key.ID, Limit: key.BudgetLimit, Period: budget.Period(key.BudgetPeriod)})
		if key.ProjectID != "" {
			if p, ok := cat.Current().Project(key.ProjectID); ok {
				scopes = append(scopes, budget.Scope{Kind: "project", ID: p.ID, Limit: p.BudgetLimit, Period: budget.Period(p.BudgetPeriod)})
			}
		}
		if err := t.Reserve(c.Request.Context(), call.RequestID, scopes, estimateCost(call, defaultOutputTokens)); err != nil {
			abort(c, err)
			return
		}
		c.Next()
		_ = t.Settle(context.WithoutCancel(c.Request.Context()), call.RequestID, call.Cost())
	}
}

func estimateCost(call *gateway.Call, defaultOutputTokens int) float64 {
	out := defaultOutputTokens
	if call.Request.MaxTokens != nil {
		out = *call.Request.MaxTokens
	}
	u := llm.Usage{InputTokens: int(gateway.EstimatePromptTokens(call.Request)), OutputTokens: out}
	return gateway.Cost(u, call.Plan.InputPricePer1K, call.Plan.OutputPricePer1K)
}
