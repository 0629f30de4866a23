package compose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/plane"
)

// The enrollment cluster (deploy/compose/enroll): a control plane that
// enrolls region eu-west's game servers, the directory's rendezvous (node
// 1), and the game servers (service GameServers), every one started from
// the same configuration and secret.

// GameServers is the enrollment cluster's game server service.
const GameServers = "gs"

// StartEnroll generates the enrollment cluster's files in dir with
// enroll/init.sh (overworld at root/bin/overworld) and starts its plane
// and rendezvous (project name project), not the game servers
// (ScaleGameServers). It does not wait for them to be ready.
func StartEnroll(ctx context.Context, d *Docker, root, project, image, dir string) (*Cluster, error) {
	c, err := prepare(ctx, d, root, project, image, dir, "deploy/compose/enroll")
	if err != nil {
		return nil, err
	}
	if _, err := c.compose(ctx, "up", "-d", "--no-deps", Plane, "rendezvous"); err != nil {
		return c, err
	}
	return c, nil
}

// ScaleGameServers runs n game server containers (starting the missing
// ones, stopping the extra ones; those running stay).
func (c *Cluster) ScaleGameServers(ctx context.Context, n int) error {
	_, err := c.compose(ctx, "up", "-d", "--no-deps", "--no-recreate", "--scale", fmt.Sprintf("%s=%d", GameServers, n), GameServers)
	return err
}

// GameServerContainers returns the game servers' container IDs.
func (c *Cluster) GameServerContainers(ctx context.Context) ([]string, error) {
	out, err := c.compose(ctx, "ps", "-q", GameServers)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// ContainerIP returns a container's address on the project network.
func (c *Cluster) ContainerIP(ctx context.Context, id string) (string, error) {
	out, err := docker(ctx, "inspect", "-f", `{{with index .NetworkSettings.Networks "`+c.Network()+`"}}{{.IPAddress}}{{end}}`, id)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// ContainerWorld fetches the /debug/world of the node in container id.
func (c *Cluster) ContainerWorld(ctx context.Context, id string) (*live.WorldSnapshot, error) {
	ip, err := c.ContainerIP(ctx, id)
	if err != nil {
		return nil, err
	}
	if ip == "" {
		return nil, errors.New("no address")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ip+":7180/debug/world", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/debug/world: %s", resp.Status)
	}
	var w live.WorldSnapshot
	return &w, json.NewDecoder(resp.Body).Decode(&w)
}

// ContainerLog returns a container's log.
func (c *Cluster) ContainerLog(ctx context.Context, id string) string {
	out, _ := exec.CommandContext(ctx, "docker", "logs", id).CombinedOutput()
	return string(out)
}

// RestartContainer stops a container, giving it grace to stop, and
// starts it again after pause.
func (c *Cluster) RestartContainer(ctx context.Context, id string, grace, pause time.Duration) error {
	if _, err := docker(ctx, "stop", "-t", fmt.Sprint(int(grace.Seconds())), id); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pause):
	}
	_, err := docker(ctx, "start", id)
	return err
}

// HostStats fetches the plane's GET /v1/hosts: certificates issued,
// refusals by reason, the IDs given.
func (c *Cluster) HostStats(ctx context.Context) (*plane.HostStats, error) {
	resp, err := c.planeGet(ctx, "/v1/hosts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("plane: /v1/hosts: %s", resp.Status)
	}
	var st plane.HostStats
	return &st, json.NewDecoder(resp.Body).Decode(&st)
}
