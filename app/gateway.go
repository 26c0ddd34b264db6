package app

// wireGateway builds the model gateway (catalog, limits, budgets, usage
// writer, provider clients, /v1 routes) and returns what the foundation
// needs from it. This is the model-endpoint engineer's file: register
// cleanups with a.OnClose and run background work under a.Context().
func (a *App) wireGateway() (Extensions, error) {
	return Extensions{}, nil
}
