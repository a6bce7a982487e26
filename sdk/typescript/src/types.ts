// Types of MIO's JSON (docs/api.md): mio.v1 messages, deliveries,
// consumers, outbound status.

export interface Conversation {
  id: string;
  type: "dm" | "group" | "channel" | string;
  title?: string;
}

export interface Sender {
  id: string;
  display_name?: string;
  is_bot?: boolean;
}

export interface Attachment {
  id: string;
  kind: "image" | "file" | "audio" | "video" | "sticker" | string;
  status: "pending" | "stored" | "failed" | "skipped" | string;
  name?: string;
  mime_type?: string;
  size?: number;
  storage_key?: string;
  content_sha256?: string;
  error?: string;
}

/** What an edit or delete points at: the original message. */
export interface EditRef {
  /** The original's MIO message id, when MIO stored it. */
  id?: string;
  /** The original's source_message_id when stored, else its platform id. */
  source_message_id: string;
  /** The platform's id of the original (Slack ts, Telegram message_id, ...). */
  platform_message_id: string;
}

/** A canonical inbound message, mio.v1.Message. */
export interface Message {
  id: string;
  tenant_id: string;
  account_id: string;
  channel_type: string;
  /** "message", "interaction" (a button click: `interaction`) or "reaction" (`reaction`); absent means "message". */
  kind?: "message" | "interaction" | "reaction";
  interaction?: Interaction;
  reaction?: Reaction;
  source_message_id: string;
  conversation: Conversation;
  thread_id?: string;
  reply_to_source_id?: string;
  sender: Sender;
  text: string;
  attachments: Attachment[];
  edited?: boolean;
  deleted?: boolean;
  /** On an edit or delete: the message it changes. */
  edit_of?: EditRef;
  sent_at?: string;
  received_at?: string;
  raw?: unknown;
  trace_id?: string;
}

/** A click on a rich_content button (or a select choice): the action id and value the agent set. */
export interface Interaction {
  action_id: string;
  value?: string;
  values?: string[];
  /** The platform id of the message the button was attached to. */
  message_id?: string;
}

/** An emoji added to (added) or removed from a platform message. */
export interface Reaction {
  emoji: string;
  added: boolean;
  message_id: string;
}

/** A reaction to send (POST /v1/reactions). */
export interface ReactionCommand {
  idempotency_key?: string;
  account_id: string;
  conversation_id: string;
  message_id: string;
  emoji: string;
  remove?: boolean;
}

/** One leased message of a consumer. */
export interface Delivery {
  delivery_id: string;
  seq: number;
  delivery_count: number;
  message: Message;
  /** The consumer that pulled it (set by the SDK). */
  consumer: string;
  /** The W3C trace context the message was received under (absent when MIO does not trace). */
  traceparent?: string;
}

export interface SettleResult {
  delivery_id: string;
  ok: boolean;
  error?: string;
}

export interface ConsumerFilter {
  channel_types?: string[];
  account_ids?: string[];
  conversation_ids?: string[];
}

/** Consumer settings; omitted ones get the server's defaults (an explicit 0 for max_deliver or max_ack_pending is refused). */
export interface ConsumerConfig {
  filter?: ConsumerFilter;
  deliver_policy?: "all" | "new" | "by_start_time";
  start_time?: string;
  /** Go duration ("30s"). */
  ack_wait?: string;
  max_deliver?: number;
  max_ack_pending?: number;
  ordering?: "none" | "conversation";
  stage?: "ready" | "received";
}

export interface ConsumerStats {
  pending: number;
  ack_pending: number;
  redelivered: number;
  dead: number;
  oldest_pending_age: string;
  last_delivered_at?: string;
}

export interface ConsumerInfo extends Required<Omit<ConsumerConfig, "start_time">> {
  name: string;
  start_time?: string;
  created_at: string;
  updated_at: string;
  stats: ConsumerStats;
}

/** The answer to a send or a reply. */
export interface Sent {
  id: string;
  handoff_state: string;
  /** True when the server answered 200: this idempotency key had already sent this command. */
  replayed: boolean;
}

export interface SendAttachment {
  url: string;
  name?: string;
  mime_type?: string;
}

/** rich_content: a card with a title, blocks, buttons and select menus, rendered natively per platform. */
export interface RichContent {
  title?: string;
  blocks?: RichBlock[];
  buttons?: RichButton[];
  /** Select menus (at most 5): a choice comes back as an interaction with action_id and the option's value. */
  selects?: RichSelect[];
}

/** One block of a card. */
export interface RichBlock {
  type: "text" | "list" | "table" | "label" | "image";
  text?: string;
  items?: string[];
  rows?: string[][];
  url?: string;
  alt?: string;
}

/** A URL button (url) or a callback button, whose click comes back as an interaction. */
export interface RichButton {
  type?: "button";
  label?: string;
  /** Accepted for label. */
  text?: string;
  action_id?: string;
  value?: string;
  url?: string;
  style?: "primary" | "danger";
}

/** A select menu: 1 to 25 options with distinct values. */
export interface RichSelect {
  type?: "select";
  action_id: string;
  placeholder?: string;
  options: RichOption[];
}

/** One choice of a select menu. */
export interface RichOption {
  label: string;
  value: string;
}

/** A SendCommand (POST /v1/outbound). */
export interface SendCommand {
  idempotency_key: string;
  account_id?: string;
  conversation_id?: string;
  thread_id?: string;
  text?: string;
  rich_content?: RichContent | Record<string, unknown>;
  attachments?: SendAttachment[];
  edit_of?: string;
  /** Opens a streamed reply (text may be empty): see Client.sendStream. */
  stream?: boolean;
}

/** The end of a streamed reply (POST /v1/outbound/{id}/finish). */
export interface StreamFinish {
  /** The seq of the last append, checked by the server; 0 or absent skips the check. */
  seq?: number;
  /** The complete final text; absent keeps what was appended. */
  text?: string;
  rich_content?: RichContent | Record<string, unknown>;
}

/** An outbound message and its state machines (GET /v1/outbound/{id}). */
export interface OutboundStatus {
  id: string;
  idempotency_key: string;
  account_id: string;
  channel_type: string;
  conversation_id: string;
  thread_id?: string;
  /** "message", or "reaction" with `reaction` set. */
  kind?: "message" | "reaction";
  reaction?: { message_id: string; emoji: string; remove?: boolean };
  text: string;
  edit_of?: string;
  handoff_state: string;
  provider_state: string;
  attempt: number;
  attempts: number;
  last_error?: string;
  provider_message_id?: string;
  events?: Record<string, unknown>[];
  rich_content?: Record<string, unknown>;
  attachments?: SendAttachment[];
  series: number;
  next_attempt_at?: string;
  created_at: string;
  updated_at: string;
  handed_off_at?: string;
  dead_at?: string;
  discarded_at?: string;
  /** Set for a streamed reply: the seq of its last append taken and whether it was finished. */
  stream?: { seq: number; finished: boolean };
}

/** One message of a conversation's history: inbound (message, without raw) or outbound (without events). */
export interface ConversationItem {
  direction: "inbound" | "outbound";
  id: string;
  at: string;
  message?: Message;
  outbound?: OutboundStatus;
}

/** A page of a conversation's history, oldest first; next_cursor fetches the older page. */
export interface ConversationPage {
  items: ConversationItem[];
  next_cursor?: string;
}

export interface TypingResult {
  status: "sent" | "unsupported" | "throttled" | "failed" | string;
  error?: string;
}
