package handlers

import (
	"errors"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/llmgw/gateway/middleware"
	"github.com/llmgw/gateway/services/items"
)

// Items serves the item service, with its own {"detail": "..."} errors.
type Items struct {
	svc     *items.Service
	maxBody int64
}

// NewItems builds the item handlers; bodies over maxBody bytes get 413.
func NewItems(svc *items.Service, maxBody int64) *Items { return &Items{svc: svc, maxBody: maxBody} }

// renderItemsError is the item service's one error renderer.
func renderItemsError(c *gin.Context, err error) {
	e := items.From(err)
	if e.Status >= 500 {
		middleware.Logger(c).Error("item request failed", zap.Error(err))
	}
	c.AbortWithStatusJSON(e.Status, e.Body())
}

// Create is POST /items.
func (h *Items) Create(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, h.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			renderItemsError(c, &items.Error{Status: http.StatusRequestEntityTooLarge, Detail: "Request body is too large."})
			return
		}
		renderItemsError(c, &items.Error{Status: http.StatusBadRequest, Detail: "Request body could not be read."})
		return
	}
	it, err := h.svc.Create(c.Request.Context(), body)
	if err != nil {
		renderItemsError(c, err)
		return
	}
	c.JSON(http.StatusOK, it)
}

// List is GET /items.
func (h *Items) List(c *gin.Context) {
	out, err := h.svc.List(c.Request.Context())
	if err != nil {
		renderItemsError(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// Get is GET /items/{item_id}.
func (h *Items) Get(c *gin.Context) {
	it, err := h.svc.Get(c.Request.Context(), c.Param("item_id"))
	if err != nil {
		renderItemsError(c, err)
		return
	}
	c.JSON(http.StatusOK, it)
}
