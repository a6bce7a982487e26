package slack

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/miohq/mio/channels"
)

// negativeTTL caps how long a lookup Slack refused (ok:false) is remembered.
const negativeTTL = 5 * time.Minute

// maxUsersInfoBody bounds the users.info response MIO reads.
const maxUsersInfoBody = 1 << 20

// displayName returns the Slack display name of user in team, or "" when it
// cannot be resolved within the lookup timeout. It never fails.
//
// Cache keys: a resolved name is stored under the team Slack reported for
// the user (shared by every account in that workspace) and under the
// account (which also covers Enterprise Grid users whose home team differs
// from the event's team). The team_id in a webhook body is only as
// trustworthy as the account that signed it, so shared entries are keyed by
// the team from Slack's own answer, and refusals are cached per account
// only: one tenant cannot plant names or misses for another's workspace.
func (c *Channel) displayName(ctx context.Context, base, accountID string, tokens channels.TokenSource, team, user string) string {
	if tokens == nil || user == "" {
		return ""
	}
	sharedKey := teamKey(team, user)
	accountKey := "acct:" + accountID + "/" + user
	if team != "" {
		if name, ok := c.names.get(sharedKey); ok {
			return name
		}
	}
	if name, ok := c.names.get(accountKey); ok {
		return name
	}
	ctx, cancel := context.WithTimeout(ctx, c.lookupTimeout)
	defer cancel()
	token, err := tokens.Token(ctx)
	if err != nil {
		c.logger.DebugContext(ctx, "slack: no token for users.info", "user", user, "error", err)
		return ""
	}
	info, err := c.usersInfo(ctx, base, token, user)
	if err != nil {
		var refused *usersInfoRefusedError
		if errors.As(err, &refused) {
			c.names.put(accountKey, "", min(c.names.ttl, negativeTTL))
		}
		c.logger.DebugContext(ctx, "slack: users.info lookup failed", "user", user, "error", err)
		return ""
	}
	if info.teamID != "" {
		c.names.put(teamKey(info.teamID, user), info.name, c.names.ttl)
	}
	c.names.put(accountKey, info.name, c.names.ttl)
	return info.name
}

func teamKey(team, user string) string { return "team:" + team + "/" + user }

// userInfo is what MIO keeps of a users.info answer.
type userInfo struct {
	teamID string
	name   string
}

// usersInfoRefusedError is a users.info answer with ok:false
// (user_not_found, missing_scope, invalid_auth, ...).
type usersInfoRefusedError struct{ code string }

func (e *usersInfoRefusedError) Error() string { return "users.info: " + e.code }

// usersInfo calls GET {base}/users.info?user=... with the bot token.
func (c *Channel) usersInfo(ctx context.Context, base, token, user string) (userInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		base+"/users.info?user="+url.QueryEscape(user), nil)
	if err != nil {
		return userInfo{}, fmt.Errorf("users.info: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.client.Do(req)
	if err != nil {
		return userInfo{}, fmt.Errorf("users.info: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return userInfo{}, fmt.Errorf("users.info: HTTP %d", resp.StatusCode)
	}
	var body struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		User  struct {
			TeamID   string `json:"team_id"`
			RealName string `json:"real_name"`
			Profile  struct {
				DisplayName string `json:"display_name"`
				RealName    string `json:"real_name"`
			} `json:"profile"`
		} `json:"user"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxUsersInfoBody)).Decode(&body); err != nil {
		return userInfo{}, fmt.Errorf("users.info: decode: %w", err)
	}
	if !body.OK {
		return userInfo{}, &usersInfoRefusedError{code: body.Error}
	}
	u := body.User
	name := u.Profile.DisplayName
	if name == "" {
		name = u.Profile.RealName
	}
	if name == "" {
		name = u.RealName
	}
	return userInfo{teamID: u.TeamID, name: name}, nil
}

// nameCache is a bounded LRU of display names with per-entry expiry, safe
// for concurrent use.
type nameCache struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	now   func() time.Time
	order *list.List // front = most recently used; values are *nameEntry
	items map[string]*list.Element
}

type nameEntry struct {
	key     string
	name    string
	expires time.Time
}

func newNameCache(max int, ttl time.Duration, now func() time.Time) *nameCache {
	return &nameCache{max: max, ttl: ttl, now: now, order: list.New(), items: make(map[string]*list.Element)}
}

// get returns the cached name for key; ok is false on a miss or an expired
// entry. A cached "" with ok true is a remembered failure.
func (c *nameCache) get(key string) (name string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, found := c.items[key]
	if !found {
		return "", false
	}
	e := el.Value.(*nameEntry)
	if !c.now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, key)
		return "", false
	}
	c.order.MoveToFront(el)
	return e.name, true
}

// put stores name under key for ttl, evicting the least recently used
// entry when the cache is full.
func (c *nameCache) put(key, name string, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	expires := c.now().Add(ttl)
	if el, found := c.items[key]; found {
		e := el.Value.(*nameEntry)
		e.name, e.expires = name, expires
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*nameEntry).key)
	}
	c.items[key] = c.order.PushFront(&nameEntry{key: key, name: name, expires: expires})
}

// len returns the number of entries, expired or not.
func (c *nameCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
