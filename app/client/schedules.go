package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/senclaw/sandbox/app/apitype"
)

// Schedules lists the schedules (without their code).
func (c *Client) Schedules(ctx context.Context) ([]apitype.Schedule, error) {
	var out struct {
		Schedules []apitype.Schedule `json:"schedules"`
	}
	return out.Schedules, c.Do(ctx, http.MethodGet, "/schedules", nil, nil, &out)
}

// Schedule reads one schedule, with its code.
func (c *Client) Schedule(ctx context.Context, id string) (*apitype.Schedule, error) {
	var v apitype.Schedule
	return &v, c.Do(ctx, http.MethodGet, "/schedules/"+url.PathEscape(id), nil, nil, &v)
}

// CreateSchedule creates a schedule.
func (c *Client) CreateSchedule(ctx context.Context, spec apitype.ScheduleSpec) (*apitype.ScheduleReply, error) {
	var out apitype.ScheduleReply
	return &out, c.Do(ctx, http.MethodPost, "/schedules", nil, spec, &out)
}

// UpdateSchedule changes a schedule.
func (c *Client) UpdateSchedule(ctx context.Context, id string, spec apitype.ScheduleSpec) (*apitype.ScheduleReply, error) {
	var out apitype.ScheduleReply
	return &out, c.Do(ctx, http.MethodPatch, "/schedules/"+url.PathEscape(id), nil, spec, &out)
}

// DeleteSchedule deletes a schedule.
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/schedules/"+url.PathEscape(id), nil, nil, nil)
}

// PauseSchedule stops a schedule firing on its own (resume: false undoes it).
func (c *Client) PauseSchedule(ctx context.Context, id string, pause bool) (*apitype.Schedule, error) {
	verb := "/pause"
	if !pause {
		verb = "/resume"
	}
	var v apitype.Schedule
	return &v, c.Do(ctx, http.MethodPost, "/schedules/"+url.PathEscape(id)+verb, nil, nil, &v)
}

// RunSchedule fires a schedule now and waits for its run.
func (c *Client) RunSchedule(ctx context.Context, id string) (*apitype.RunReply, error) {
	var out apitype.RunReply
	return &out, c.Do(ctx, http.MethodPost, "/schedules/"+url.PathEscape(id)+"/run", url.Values{"wait": {"1"}}, nil, &out)
}

// ScheduleHistory reads a schedule's firings, newest first.
func (c *Client) ScheduleHistory(ctx context.Context, id string, limit int) ([]apitype.Firing, error) {
	var out struct {
		History []apitype.Firing `json:"history"`
	}
	return out.History, c.Do(ctx, http.MethodGet, "/schedules/"+url.PathEscape(id)+"/history", url.Values{"limit": {strconv.Itoa(limit)}}, nil, &out)
}

// RunsFrom reads the newest runs of one source (scheduler, agent-shell, ...).
func (c *Client) RunsFrom(ctx context.Context, source string, limit int) ([]apitype.RunRecord, error) {
	var out struct {
		Runs []apitype.RunRecord `json:"runs"`
	}
	return out.Runs, c.Do(ctx, http.MethodGet, "/runs", url.Values{"source": {source}, "limit": {strconv.Itoa(limit)}}, nil, &out)
}
