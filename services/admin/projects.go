package admin

import (
	"context"
	"time"

	"github.com/llmgw/gateway/models"
	"github.com/llmgw/gateway/services/apierr"
	"github.com/llmgw/gateway/services/validate"
)

// ProjectInput is the body of POST and PUT /admin/projects.
type ProjectInput struct {
	Name         *string  `json:"name" validate:"omitnil,min=1,max=255"`
	Description  *string  `json:"description" validate:"omitnil,max=10000"`
	BudgetLimit  *float64 `json:"budget_limit" validate:"omitnil,gt=0"`
	BudgetPeriod *string  `json:"budget_period" validate:"omitnil,oneof=daily weekly monthly total"`
	present      present
}

// UnmarshalJSON records which fields the body carried.
func (in *ProjectInput) UnmarshalJSON(b []byte) error {
	type plain ProjectInput
	return decodeTracked(b, (*plain)(in), &in.present)
}

// Project is a project as the API returns it.
type Project struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	BudgetLimit  *float64  `json:"budget_limit"`
	BudgetPeriod string    `json:"budget_period"`
	CurrentSpend float64   `json:"current_spend"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

func (in *ProjectInput) check(create bool) error {
	trimPtr(in.Name)
	trimPtr(in.BudgetPeriod)
	var f fieldCheck
	p := in.present
	if create {
		f.required(p, "name", in.Name == nil)
	} else {
		f.notNull(p, "name", in.Name == nil)
	}
	f.notNull(p, "budget_period", in.BudgetPeriod == nil)
	f = append(f, validate.Struct(in)...)
	return validate.Fields(f)
}

func applyProject(in *ProjectInput, p *models.Project) {
	if in.Name != nil {
		p.Name = *in.Name
	}
	if in.present.Has("description") {
		p.Description = deref(in.Description)
	}
	if in.present.Has("budget_limit") {
		p.BudgetLimit = in.BudgetLimit
	}
	if in.BudgetPeriod != nil {
		p.BudgetPeriod = *in.BudgetPeriod
	}
}

func (s *Service) projectView(ctx context.Context, p *models.Project) (Project, error) {
	spend, err := s.spend.CurrentSpend(ctx, "project", p.ID, p.BudgetPeriod)
	if err != nil {
		return Project{}, apierr.Internal("Could not read the project's spend.").WithCause(err)
	}
	return Project{
		ID: p.ID, Name: p.Name, Description: p.Description, BudgetLimit: p.BudgetLimit,
		BudgetPeriod: p.BudgetPeriod, CurrentSpend: spend,
		CreatedAt: utc(p.CreatedAt), UpdatedAt: utc(p.UpdatedAt),
	}, nil
}

// CreateProject validates and stores a project.
func (s *Service) CreateProject(ctx context.Context, in *ProjectInput) (*Project, error) {
	if err := in.check(true); err != nil {
		return nil, err
	}
	now := utc(s.now())
	p := &models.Project{ID: newID(), BudgetPeriod: PeriodMonthly, CreatedAt: now, UpdatedAt: now}
	applyProject(in, p)
	if err := s.st.Projects.Create(ctx, p); err != nil {
		return nil, storeErr(err, "project", p.Name)
	}
	s.changed()
	v, err := s.projectView(ctx, p)
	return &v, err
}

// GetProject reads one project with its current spend.
func (s *Service) GetProject(ctx context.Context, id string) (*Project, error) {
	p, err := s.st.Projects.Get(ctx, id)
	if err != nil {
		return nil, storeErr(err, "project", id)
	}
	v, err := s.projectView(ctx, p)
	return &v, err
}

// ListProjects lists projects newest first.
func (s *Service) ListProjects(ctx context.Context, lp ListParams) (*List[Project], error) {
	page, fields := parsePage(lp)
	if err := validate.Fields(fields); err != nil {
		return nil, err
	}
	rows, total, err := s.st.Projects.List(ctx, page)
	if err != nil {
		return nil, err
	}
	return newList(rows, total, page, func(p *models.Project) (Project, error) { return s.projectView(ctx, p) })
}

// UpdateProject changes the fields present in the body.
func (s *Service) UpdateProject(ctx context.Context, id string, in *ProjectInput) (*Project, error) {
	if err := in.check(false); err != nil {
		return nil, err
	}
	p, err := s.st.Projects.Get(ctx, id)
	if err != nil {
		return nil, storeErr(err, "project", id)
	}
	applyProject(in, p)
	p.UpdatedAt = utc(s.now())
	if err := s.st.Projects.Update(ctx, p); err != nil {
		label := p.Name
		if isNotFound(err) {
			label = id
		}
		return nil, storeErr(err, "project", label)
	}
	s.changed()
	v, err := s.projectView(ctx, p)
	return &v, err
}

// DeleteProject removes a project that no key belongs to (409 otherwise).
func (s *Service) DeleteProject(ctx context.Context, id string) (*Deleted, error) {
	p, err := s.st.Projects.Get(ctx, id)
	if err != nil {
		return nil, storeErr(err, "project", id)
	}
	if err := s.st.Projects.Delete(ctx, id); err != nil {
		label := p.Name
		if isNotFound(err) {
			label = id
		}
		return nil, storeErr(err, "project", label)
	}
	s.changed()
	return &Deleted{ID: id, Deleted: true}, nil
}
