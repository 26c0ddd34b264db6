package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/gateway/services/admin"
)

// Admin serves /admin: each handler binds, calls admin.Service and renders.
type Admin struct{ svc *admin.Service }

// NewAdmin builds the admin handlers.
func NewAdmin(svc *admin.Service) *Admin { return &Admin{svc: svc} }

func listParams(c *gin.Context) admin.ListParams {
	return admin.ListParams{
		Page: c.Query("page"), PageSize: c.Query("page_size"),
		Enabled: c.Query("enabled"), ProjectID: c.Query("project_id"),
	}
}

// create binds the body into In and calls fn, answering 201.
func create[In any, Out any](c *gin.Context, fn func(context.Context, *In) (Out, error)) {
	var in In
	if err := bindJSON(c, &in); err != nil {
		RenderError(c, err)
		return
	}
	out, err := fn(c.Request.Context(), &in)
	respond(c, http.StatusCreated, out, err)
}

// update binds the body into In and calls fn with the path id, answering 200.
func update[In any, Out any](c *gin.Context, fn func(context.Context, string, *In) (Out, error)) {
	var in In
	if err := bindJSON(c, &in); err != nil {
		RenderError(c, err)
		return
	}
	out, err := fn(c.Request.Context(), c.Param("id"), &in)
	respond(c, http.StatusOK, out, err)
}

func (h *Admin) ListProviders(c *gin.Context) {
	out, err := h.svc.ListProviders(c.Request.Context(), listParams(c))
	respond(c, http.StatusOK, out, err)
}
func (h *Admin) CreateProvider(c *gin.Context) {
	create(c, func(ctx context.Context, in *admin.ProviderInput) (*admin.Provider, error) {
		return h.svc.CreateProvider(ctx, in)
	})
}
func (h *Admin) GetProvider(c *gin.Context) {
	out, err := h.svc.GetProvider(c.Request.Context(), c.Param("id"))
	respond(c, http.StatusOK, out, err)
}
func (h *Admin) UpdateProvider(c *gin.Context) {
	update(c, func(ctx context.Context, id string, in *admin.ProviderInput) (*admin.Provider, error) {
		return h.svc.UpdateProvider(ctx, id, in)
	})
}
func (h *Admin) DeleteProvider(c *gin.Context) {
	out, err := h.svc.DeleteProvider(c.Request.Context(), c.Param("id"))
	respond(c, http.StatusOK, out, err)
}

func (h *Admin) ListProjects(c *gin.Context) {
	out, err := h.svc.ListProjects(c.Request.Context(), listParams(c))
	respond(c, http.StatusOK, out, err)
}
func (h *Admin) CreateProject(c *gin.Context) {
	create(c, func(ctx context.Context, in *admin.ProjectInput) (*admin.Project, error) {
		return h.svc.CreateProject(ctx, in)
	})
}
func (h *Admin) GetProject(c *gin.Context) {
	out, err := h.svc.GetProject(c.Request.Context(), c.Param("id"))
	respond(c, http.StatusOK, out, err)
}
func (h *Admin) UpdateProject(c *gin.Context) {
	update(c, func(ctx context.Context, id string, in *admin.ProjectInput) (*admin.Project, error) {
		return h.svc.UpdateProject(ctx, id, in)
	})
}
func (h *Admin) DeleteProject(c *gin.Context) {
	out, err := h.svc.DeleteProject(c.Request.Context(), c.Param("id"))
	respond(c, http.StatusOK, out, err)
}

func (h *Admin) ListKeys(c *gin.Context) {
	out, err := h.svc.ListKeys(c.Request.Context(), listParams(c))
	respond(c, http.StatusOK, out, err)
}
func (h *Admin) CreateKey(c *gin.Context) {
	create(c, func(ctx context.Context, in *admin.KeyInput) (*admin.CreatedKey, error) {
		return h.svc.CreateKey(ctx, in)
	})
}
func (h *Admin) GetKey(c *gin.Context) {
	out, err := h.svc.GetKey(c.Request.Context(), c.Param("id"))
	respond(c, http.StatusOK, out, err)
}
func (h *Admin) UpdateKey(c *gin.Context) {
	update(c, func(ctx context.Context, id string, in *admin.KeyInput) (*admin.Key, error) {
		return h.svc.UpdateKey(ctx, id, in)
	})
}
func (h *Admin) DeleteKey(c *gin.Context) {
	out, err := h.svc.DeleteKey(c.Request.Context(), c.Param("id"))
	respond(c, http.StatusOK, out, err)
}

func (h *Admin) ListAliases(c *gin.Context) {
	out, err := h.svc.ListAliases(c.Request.Context(), listParams(c))
	respond(c, http.StatusOK, out, err)
}
func (h *Admin) CreateAlias(c *gin.Context) {
	create(c, func(ctx context.Context, in *admin.AliasInput) (*admin.Alias, error) {
		return h.svc.CreateAlias(ctx, in)
	})
}

// aliasRef is the id or alias name of the catch-all path parameter "ref".
func aliasRef(c *gin.Context) string { return strings.TrimPrefix(c.Param("ref"), "/") }

// GetAlias, UpdateAlias and DeleteAlias take an id or an alias name.
func (h *Admin) GetAlias(c *gin.Context) {
	out, err := h.svc.GetAlias(c.Request.Context(), aliasRef(c))
	respond(c, http.StatusOK, out, err)
}
func (h *Admin) UpdateAlias(c *gin.Context) {
	var in admin.AliasInput
	if err := bindJSON(c, &in); err != nil {
		RenderError(c, err)
		return
	}
	out, err := h.svc.UpdateAlias(c.Request.Context(), aliasRef(c), &in)
	respond(c, http.StatusOK, out, err)
}
func (h *Admin) DeleteAlias(c *gin.Context) {
	out, err := h.svc.DeleteAlias(c.Request.Context(), aliasRef(c))
	respond(c, http.StatusOK, out, err)
}

// UsageStats is GET /admin/usage/stats.
func (h *Admin) UsageStats(c *gin.Context) {
	out, err := h.svc.UsageStats(c.Request.Context(), admin.StatsParams{
		StartDate: c.Query("start_date"), EndDate: c.Query("end_date"), GroupBy: c.Query("group_by"),
		KeyID: c.Query("key_id"), ProjectID: c.Query("project_id"),
		Provider: c.Query("provider"), Model: c.Query("model"),
	})
	respond(c, http.StatusOK, out, err)
}
