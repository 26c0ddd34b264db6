package middleware

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/catalog"
	"github.com/llmgw/gateway/services/gateway"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/routing"
)

// Decoder parses one client wire format into the canonical request.
type Decoder func(body []byte) (*llm.Request, error)

// Decode reads the body once, decodes it in the route's format, resolves the
// model to a routing plan from the in-memory catalog and checks the key may
// use it. Everything after works on the canonical request.
func Decode(decode Decoder, cat *catalog.Catalog, defaultOutputTokens int) gin.HandlerFunc {
	return func(c *gin.Context) {
		call := Call(c)
		body, err := io.ReadAll(c.Request.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				deferAbort(c, apierr.InvalidRequestStatus(http.StatusRequestEntityTooLarge,
					"The request body is larger than the server accepts.", map[string]any{"max_bytes": mbe.Limit}))
				return
			}
			deferAbort(c, apierr.InvalidRequest("The request body could not be read."))
			return
		}
		req, err := decode(body)
		if err != nil {
			// The usage record still names the model the client asked for.
			call.Request = requestedModel(body)
			deferAbort(c, err)
			return
		}
		call.Request = req
		plan, err := routing.Resolve(cat.Current(), req.Model)
		if err != nil {
			deferAbort(c, err)
			return
		}
		call.Plan = plan
		if !call.Key.Allows(req.Model) {
			deferAbort(c, apierr.Permission("This API key may not use model '"+req.Model+"'."))
			return
		}
		call.EstimatedTokens = gateway.EstimateTotalTokens(req, defaultOutputTokens)
		c.Next()
	}
}

// requestedModel is what a body the decoder refused says about its model and
// streaming, for the usage record (nil when it says nothing readable).
func requestedModel(body []byte) *llm.Request {
	var probe struct {
		Model  any  `json:"model"`
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &probe) // best effort: a wrong-typed field leaves the others set
	m, _ := probe.Model.(string)
	if m == "" {
		return nil
	}
	return &llm.Request{Model: m, Stream: probe.Stream}
}

// Account opens the model call, and once the request is done (whatever its
// outcome, panics included) hands the usage record to the async writer.
func Account(record func(gateway.Call), now func() time.Time) gin.HandlerFunc {
	return func(c *gin.Context) {
		call := &gateway.Call{RequestID: RequestID(c), Key: Key(c), Started: now()}
		c.Set(callCtxKey, call)
		defer func() {
			if call.Status == 0 {
				call.Status = c.Writer.Status()
			}
			if p := recover(); p != nil {
				call.Status, call.ErrorType = http.StatusInternalServerError, string(apierr.TypeInternal)
				record(*call)
				panic(p) // the recover middleware renders it
			}
			record(*call)
		}()
		c.Next()
	}
}
