package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/middleware"
	"github.com/llmgw/gateway/services/catalog"
	"github.com/llmgw/gateway/services/chat"
	"github.com/llmgw/gateway/services/gateway"
	"github.com/llmgw/gateway/services/llm"
	"github.com/llmgw/gateway/services/messages"
	"github.com/llmgw/gateway/services/responses"
	"github.com/llmgw/gateway/services/sse"
)

// Model serves the /v1 model endpoints. The request was authenticated,
// decoded, resolved and admitted by middleware; these handlers only run the
// call and render it in the client's format.
type Model struct {
	gw  *gateway.Service
	cat *catalog.Catalog
}

// NewModel builds the model handlers.
func NewModel(gw *gateway.Service, cat *catalog.Catalog) *Model { return &Model{gw: gw, cat: cat} }

// ChatCompletions is POST /v1/chat/completions.
func (h *Model) ChatCompletions(c *gin.Context) {
	call := middleware.Call(c)
	if call.Request.Stream {
		h.stream(c, call, func(w *sse.Writer) gateway.EventWriter {
			return chat.NewStreamWriter(w, call.Request.Model, call.Request.IncludeUsage)
		})
		return
	}
	h.complete(c, call, chat.EncodeResponse)
}

// Messages is POST /v1/messages.
func (h *Model) Messages(c *gin.Context) {
	call := middleware.Call(c)
	if call.Request.Stream {
		h.stream(c, call, func(w *sse.Writer) gateway.EventWriter {
			return messages.NewStreamWriter(w, call.Request.Model)
		})
		return
	}
	h.complete(c, call, messages.EncodeResponse)
}

// Responses is POST /v1/responses.
func (h *Model) Responses(c *gin.Context) {
	h.complete(c, middleware.Call(c), responses.EncodeResponse)
}

func (h *Model) complete(c *gin.Context, call *gateway.Call, encode func(*llm.Response, string) ([]byte, error)) {
	resp, err := h.gw.Complete(c.Request.Context(), call)
	if err != nil {
		RenderError(c, err)
		return
	}
	body, err := encode(resp, call.Request.Model)
	if err != nil {
		RenderError(c, err)
		return
	}
	servedBy(c, call.Provider, call.UpstreamModel)
	c.Data(http.StatusOK, "application/json", body)
}

func (h *Model) stream(c *gin.Context, call *gateway.Call, writer func(*sse.Writer) gateway.EventWriter) {
	open := func(m gateway.Meta) (gateway.EventWriter, error) {
		servedBy(c, m.Provider, m.Model)
		hd := c.Writer.Header()
		hd.Set("Content-Type", "text/event-stream")
		hd.Set("Cache-Control", "no-cache")
		hd.Set("Connection", "keep-alive")
		hd.Set("X-Accel-Buffering", "no") // stop nginx-style proxies from buffering the stream
		c.Status(http.StatusOK)
		c.Writer.WriteHeaderNow()
		return writer(sse.NewWriter(c.Writer, c.Writer.Flush)), nil
	}
	if err := h.gw.Stream(c.Request.Context(), call, open); err != nil {
		RenderError(c, err)
	}
}

func servedBy(c *gin.Context, providerName, model string) {
	c.Header("X-Gateway-Provider", providerName)
	c.Header("X-Gateway-Model", model)
}

// ListModels is GET /v1/models: the aliases this key may use, in the OpenAI
// list shape.
func (h *Model) ListModels(c *gin.Context) {
	key := middleware.Key(c)
	snap := h.cat.Current()
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	data := make([]model, 0, len(snap.Aliases()))
	for _, a := range snap.Aliases() {
		if a.Enabled && key.Allows(a.Name) {
			data = append(data, model{ID: a.Name, Object: "model", Created: a.Created.Unix(), OwnedBy: "gateway"})
		}
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}
