// store_reads.cc: the store's read queries (store_impl.h), each on a reader connection of its
// own (a WAL snapshot as of the last commit): positions, queue facts, events, status, list,
// export, stats, changes, the allowlist and health.
#include "storage/store_impl.h"
#include "storage/suppression_io.h"

namespace bounced::store_detail {

namespace {

// suppression_log rows (as `l`) as SuppressionChange (ReadChange).
constexpr std::string_view kChangeColumns =
    "l.id, l.time, l.address, l.action, l.source, l.reason, l.category, l.actor_uid, l.note";

SuppressionChange ReadChange(const sql::Stmt& st) {
  return {st.Int(0),  st.Int(1),  st.Text(2), st.Text(3), st.Text(4),
          st.Text(5), st.Text(6), st.Int(7),  st.Text(8)};
}

constexpr std::string_view kEventColumns =
    "id, time, time_text, source, source_ref, queue_id, message_id, sender, recipient, "
    "original_recipient, log_status, relay, program, bounce_queue_id, category, status, "
    "reply_code, stage, provider, provider_code, diagnostic, remote_mta, dsn_action, rule, counted";

StoredEvent ReadEvent(const sql::Stmt& st) {
  StoredEvent se;
  Event& e = se.event;
  se.id = st.Int(0);
  e.unix_time = st.Int(1);
  e.time_text = st.Text(2);
  e.source = EventSourceFromName(st.TextView(3)).value_or(EventSource::kManual);
  e.source_ref = st.Text(4);
  e.queue_id = st.Text(5);
  e.message_id = st.Text(6);
  e.sender = st.Text(7);
  e.result.recipient = st.Text(8);
  e.result.original_recipient = st.Text(9);
  e.log_status = st.Text(10);
  e.relay = st.Text(11);
  e.program = st.Text(12);
  e.bounce_queue_id = st.Text(13);
  e.result.category = CategoryFromName(st.TextView(14)).value_or(Category::kUndetermined);
  e.result.status = st.Text(15);
  e.result.reply_code = st.Text(16);
  e.result.stage = st.Text(17);
  e.result.provider = st.Text(18);
  e.result.provider_code = st.Text(19);
  e.result.diagnostic = st.Text(20);
  e.result.remote_mta = st.Text(21);
  e.result.dsn_action = st.Text(22);
  e.result.rule = st.Text(23);
  se.counted = st.Int(24) != 0;
  return se;
}

constexpr std::string_view kStateColumns =
    "address, first_seen, last_event, last_category, last_log_status, last_delivered, "
    "last_failure, incidents, incidents_since, last_incident, manual_unsuppressed, events, "
    "pending_delivery, pending_message_id, pending_earlier";

RecipientState ReadState(const sql::Stmt& st) {
  RecipientState r;
  r.address = st.Text(0);
  r.first_seen = st.Int(1);
  r.last_event = st.Int(2);
  r.last_category = st.Text(3);
  r.last_log_status = st.Text(4);
  r.last_delivered = st.Int(5);
  r.last_failure = st.Int(6);
  r.incidents = static_cast<int>(st.Int(7));
  r.incidents_since = st.Int(8);
  r.last_incident = st.Int(9);
  r.manual_unsuppressed = st.Int(10);
  r.events = st.Int(11);
  r.pending_delivery = st.Int(12);
  r.pending_message_id = st.Text(13);
  r.pending_earlier = st.Text(14);
  return r;
}

}  // namespace

void StoreImpl::ReaderDeleter::operator()(sql::Db* db) const {
  std::lock_guard lock(store->readers_mu_);
  store->readers_.emplace_back(db);
}

Expected<StoreImpl::Reader> StoreImpl::AcquireReader() {
  {
    std::lock_guard lock(readers_mu_);
    if (!readers_.empty()) {
      sql::Db* db = readers_.back().release();
      readers_.pop_back();
      return Reader(db, ReaderDeleter{this});
    }
  }
  auto db = std::make_unique<sql::Db>();
  if (Status s = db->Open(options_.path, false, options_.busy_timeout_ms); !s) return s;
  if (Status s = db->Exec("PRAGMA query_only=1"); !s) return s;
  return Reader(db.release(), ReaderDeleter{this});
}

Expected<std::optional<InputPosition>> StoreImpl::LoadPosition(std::string_view input) {
  auto db = AcquireReader();
  if (!db) return db.status();
  sql::Stmt st;
  if (Status s = st.Prepare(**db,
                            "SELECT inode, offset, cursor, updated FROM input_positions "
                            "WHERE input = ?1");
      !s) {
    return s;
  }
  st.Bind(1, input);
  auto r = st.Step();
  if (!r) return r.status();
  if (!*r) return std::optional<InputPosition>();
  InputPosition p;
  p.input = std::string(input);
  p.inode = static_cast<uint64_t>(st.Int(0));
  p.offset = static_cast<uint64_t>(st.Int(1));
  p.cursor = st.Text(2);
  p.updated = st.Int(3);
  return std::optional<InputPosition>(std::move(p));
}

Expected<std::vector<QueueFacts>> StoreImpl::LoadQueueFacts(std::string_view input) {
  auto db = AcquireReader();
  if (!db) return db.status();
  sql::Stmt st;
  if (Status s = st.Prepare(**db,
                            "SELECT queue_id, sender, sender_known, message_id, bounce_queue_id, "
                            "size, nrcpt, updated FROM queue_facts WHERE input = ?1 "
                            "ORDER BY updated, queue_id");
      !s) {
    return s;
  }
  st.Bind(1, input);
  std::vector<QueueFacts> out;
  for (;;) {
    auto r = st.Step();
    if (!r) return r.status();
    if (!*r) break;
    QueueFacts& f = out.emplace_back();
    f.queue_id = st.Text(0);
    f.sender = st.Text(1);
    f.sender_known = st.Int(2) != 0;
    f.message_id = st.Text(3);
    f.bounce_queue_id = st.Text(4);
    f.size = st.Int(5);
    f.nrcpt = static_cast<int>(st.Int(6));
    f.updated = st.Int(7);
  }
  return out;
}

namespace {

// The events of `key`, newest first, at most `max`: those recorded under it, and those of
// another address it is the original recipient of (a forward, a VERP return path's), each
// found through its own index. Callers run both reads in one transaction (one snapshot).
Expected<std::vector<StoredEvent>> ReadEvents(sql::Db& db, std::string_view key, size_t max) {
  std::vector<StoredEvent> out;
  const struct {
    const char* rows;
    bool original;
  } reads[] = {
      {"SELECT id FROM event_rows WHERE recipient_key = ?1 ORDER BY time DESC, id DESC LIMIT ?2",
       false},
      {"SELECT event_id FROM event_originals WHERE original_key = ?1 "
       "ORDER BY time DESC, event_id DESC LIMIT ?2",
       true}};
  for (const auto& read : reads) {  // not a structured binding: clang 14 cannot capture one
    sql::Stmt st;
    std::string q =
        "SELECT " + std::string(kEventColumns) + " FROM events WHERE id IN (" + read.rows + ")";
    if (Status s = st.Prepare(db, q); !s) return s;
    st.Bind(1, key).Bind(2, static_cast<int64_t>(max));
    Status walked = st.ForEachRow([&] {
      out.push_back(ReadEvent(st));
      out.back().as_original_recipient = read.original;
    });
    if (!walked) return walked;
  }
  std::sort(out.begin(), out.end(), [](const StoredEvent& a, const StoredEvent& b) {
    return std::tie(a.event.unix_time, a.id) > std::tie(b.event.unix_time, b.id);
  });
  if (out.size() > max) out.resize(max);
  return out;
}

// allowlist rows, as ReadAllowEntry reads them.
constexpr std::string_view kAllowColumns = "entry, kind, reason, created, actor_uid";

AllowEntry ReadAllowEntry(const sql::Stmt& st) {
  AllowEntry a;
  a.entry = st.Text(0);
  a.domain = st.TextView(1) == "domain";
  a.reason = st.Text(2);
  a.created = st.Int(3);
  a.actor_uid = st.Int(4);
  return a;
}

}  // namespace

Expected<std::vector<StoredEvent>> StoreImpl::EventsFor(std::string_view address,
                                                        size_t max_events) {
  std::string key = NormalizeAddress(address, Delimiters());
  if (key.empty()) return Status::Error("invalid address '" + std::string(address) + "'");
  auto db = AcquireReader();
  if (!db) return db.status();
  ReadTxn txn(**db);
  if (!txn.status()) return txn.status();
  return ReadEvents(**db, key, max_events);
}

Expected<std::vector<StoredEvent>> StoreImpl::QueueEvents(const QueueEventsQuery& q) {
  std::vector<StoredEvent> out;
  if (q.queue_id.empty()) return out;
  // Not before 1970: days of those times may not sort as text.
  const int64_t since = std::max<int64_t>(0, q.since);
  auto db = AcquireReader();
  if (!db) return db.status();
  ReadTxn txn(**db);  // the first id and the rows: one snapshot
  if (!txn.status()) return txn.status();
  std::string key;
  int64_t first_id = -1;
  std::string rows;
  if (!q.recipient.empty()) {
    key = NormalizeAddress(q.recipient, Delimiters());
    if (key.empty()) key = q.recipient;  // stored under its own text (see ApplyEvent)
    rows = "SELECT id FROM event_rows WHERE recipient_key = ?1 AND time >= ?2 AND queue_id = ?3";
  } else {
    // The ids of the days from `since` on are a range (event_days), read in one pass without
    // an index on time, as LoadDsnBounceIndex does.
    auto first = FirstEventIdOfDays(**db, since);
    if (!first) return first.status();
    first_id = *first;
    if (first_id < 0) return out;  // no events on those days
    rows = "SELECT id FROM event_rows WHERE id >= ?1 AND queue_id = ?3 AND time >= ?2";
  }
  sql::Stmt st;
  if (Status s =
          st.Prepare(**db, "SELECT " + std::string(kEventColumns) + " FROM events WHERE id IN (" +
                               rows + ") AND source IN ('log', 'journal') ORDER BY id");
      !s) {
    return s;
  }
  if (key.empty()) {
    st.Bind(1, first_id);
  } else {
    st.Bind(1, key);
  }
  st.Bind(2, since).Bind(3, q.queue_id);
  if (Status walked = st.ForEachRow([&] { out.push_back(ReadEvent(st)); }); !walked) {
    return walked;
  }
  return out;
}

Expected<std::vector<SuppressionChange>> StoreImpl::Changes(const ChangesQuery& q) {
  std::string domain;
  if (!q.domain.empty()) {
    domain = NormalizeDomain(q.domain[0] == '@' ? std::string_view(q.domain).substr(1) : q.domain);
    if (domain.empty()) return Status::Error("changes: invalid domain '" + q.domain + "'");
  }
  auto db = AcquireReader();
  if (!db) return db.status();
  // The id range walks the table in order; `day` (indexed) narrows a `since` without an id. The
  // log has no domain column: a key ends in "@domain".
  sql::Stmt st;
  if (Status s = st.Prepare(**db, "SELECT " + std::string(kChangeColumns) +
                                      " FROM suppression_log l WHERE l.id > ?1 AND l.day >= ?2 "
                                      "AND l.time >= ?3 AND (?4 = '' OR substr(l.address, "
                                      "-length(?4) - 1) = '@' || ?4) ORDER BY l.id LIMIT ?5");
      !s) {
    return s;
  }
  st.Bind(1, std::max<int64_t>(q.after_id, 0))
      .Bind(2, q.since > 0 ? DayOf(q.since) : std::string())
      .Bind(3, q.since)
      .Bind(4, domain)
      .Bind(5, static_cast<int64_t>(std::clamp<size_t>(q.limit, 1, kMaxChanges)));
  std::vector<SuppressionChange> out;
  Status walked = st.ForEachRow([&] { out.push_back(ReadChange(st)); });
  if (!walked) return walked;
  return out;
}

Expected<std::vector<StoredEvent>> StoreImpl::FindEvents(const EventsQuery& q) {
  std::vector<StoredEvent> out;
  const size_t limit = std::min(q.limit, kMaxFoundEvents);
  std::string recipient_key;
  if (!q.recipient.empty()) {
    recipient_key = NormalizeAddress(q.recipient, Delimiters());
    if (recipient_key.empty()) return Status::Error("invalid address '" + q.recipient + "'");
  }
  if (limit == 0) return out;
  // Not before 1970: days of those times may not sort as text.
  const int64_t since = std::max<int64_t>(0, q.since);
  auto db = AcquireReader();
  if (!db) return db.status();
  ReadTxn txn(**db);  // the first id and the rows: one snapshot
  if (!txn.status()) return txn.status();
  // The ids of the days from `since` on are a range (event_days), walked from its end without
  // an index on time; the kind's fields are matched once per kind, not per row. Only the
  // filters that are set are in the statement; their texts are bound.
  auto first = FirstEventIdOfDays(**db, since);
  if (!first) return first.status();
  if (*first < 0) return out;  // no events on those days
  std::vector<const std::string*> texts;
  auto text_filter = [&](std::string& where, std::string_view column, const std::string& value) {
    texts.push_back(&value);
    where += " AND " + std::string(column) + " = ?" + std::to_string(texts.size() + 3);
  };
  std::string rows = "SELECT id FROM event_rows WHERE id >= ?1 AND time >= ?2";
  if (q.after_id >= 0) rows += " AND id > " + std::to_string(q.after_id);
  if (q.until != 0) rows += " AND time < ?3";
  static const std::string kNone;
  if (!recipient_key.empty()) text_filter(rows, "recipient_key", recipient_key);
  if (!q.domain.empty()) text_filter(rows, "domain", q.domain);
  if (q.sender == "<>") {
    rows += " AND sender IS NULL";  // stored as NULL (event_rows keeps "" as NULL)
  } else if (!q.sender.empty()) {
    text_filter(rows, "sender", q.sender);
  }
  const std::string sender_domain = SenderDomainSql("sender");
  if (!q.sender_domain.empty()) text_filter(rows, sender_domain, q.sender_domain);
  std::string kinds;
  if (!q.category.empty()) text_filter(kinds, "category", q.category);
  if (q.provider == "-") {
    text_filter(kinds, "provider", kNone);
  } else if (!q.provider.empty()) {
    text_filter(kinds, "provider", q.provider);
  }
  if (!q.provider_code.empty()) text_filter(kinds, "provider_code", q.provider_code);
  if (!q.log_status.empty()) text_filter(kinds, "log_status", q.log_status);
  if (!q.source.empty()) text_filter(kinds, "source", q.source);
  if (!kinds.empty()) rows += " AND kind IN (SELECT id FROM event_kinds WHERE 1" + kinds + ")";
  const char* order = q.after_id >= 0 ? " ORDER BY id" : " ORDER BY id DESC";
  rows += order + std::string(" LIMIT ") + std::to_string(limit);
  sql::Stmt st;
  if (Status s = st.Prepare(**db, "SELECT " + std::string(kEventColumns) +
                                      " FROM events WHERE id IN (" + rows + ")" + order);
      !s) {
    return s;
  }
  st.Bind(1, *first).Bind(2, since);
  if (q.until != 0) st.Bind(3, q.until);
  for (size_t i = 0; i < texts.size(); ++i) st.BindRef(static_cast<int>(i + 4), *texts[i]);
  if (Status walked = st.ForEachRow([&] { out.push_back(ReadEvent(st)); }); !walked) {
    return walked;
  }
  return out;
}

Expected<AddressStatus> StoreImpl::GetStatus(std::string_view address, size_t max_events) {
  AddressStatus out;
  out.address = std::string(address);
  out.key = NormalizeAddress(address, Delimiters());
  if (out.key.empty()) return Status::Error("invalid address '" + std::string(address) + "'");
  auto db = AcquireReader();
  if (!db) return db.status();
  ReadTxn txn(**db);
  if (!txn.status()) return txn.status();
  if (Status s = ReadFirstRow(
          **db,
          "SELECT " + std::string(kSuppressionColumns) + " FROM suppressions WHERE address = ?1",
          out.key, [&](const sql::Stmt& st) { out.suppression = ReadSuppression(st); });
      !s) {
    return s;
  }
  {
    sql::Stmt st;
    if (Status s = st.Prepare(
            **db, "SELECT " + std::string(kAllowColumns) + " FROM allowlist WHERE entry = ?1");
        !s) {
      return s;
    }
    for (const std::string& c : AllowCandidates(out.key)) {
      st.Bind(1, c);
      auto r = st.Step();
      if (!r) return r.status();
      if (*r) {
        out.allowed_by = ReadAllowEntry(st);
        break;
      }
      st.Reset();
    }
  }
  if (Status s = ReadFirstRow(
          **db, "SELECT " + std::string(kStateColumns) + " FROM recipient_state WHERE address = ?1",
          out.key, [&](const sql::Stmt& st) { out.state = ReadState(st); });
      !s) {
    return s;
  }
  {
    sql::Stmt st;
    if (Status s = st.Prepare(**db, "SELECT " + std::string(kChangeColumns) +
                                        " FROM suppression_log l WHERE l.address = ?1 "
                                        "ORDER BY l.id DESC LIMIT " +
                                        std::to_string(AddressStatus::kMaxHistory));
        !s) {
      return s;
    }
    st.Bind(1, out.key);
    if (Status walked = st.ForEachRow([&] { out.history.push_back(ReadChange(st)); }); !walked) {
      return walked;
    }
  }
  auto events = ReadEvents(**db, out.key, max_events);
  if (!events) return events.status();
  out.events = std::move(*events);
  const int64_t now = Now();
  out.suppressed = out.suppression && !out.allowed_by &&
                   (out.suppression->expires == 0 || out.suppression->expires > now);
  return out;
}

Status StoreImpl::List(const ListFilter& f, const std::function<bool(const Suppression&)>& sink) {
  auto db = AcquireReader();
  if (!db) return db.status();
  sql::Stmt st;
  if (Status r = PrepareList(**db, f, Now(), &st); !r) return r;
  if (Status walked = st.ForEachRow([&] { return sink(ReadSuppression(st)); }); !walked) {
    return walked;
  }
  return Status::Ok();
}

Status StoreImpl::Export(ExportFormat format, const ListFilter& filter,
                         const std::function<bool(std::string_view line)>& sink) {
  if (format == ExportFormat::kCsv) {
    std::string header = std::string(kCsvHeader) + "\n";
    if (!sink(header)) return Status::Ok();
  }
  return List(filter, [&](const Suppression& s) { return sink(FormatExportLine(format, s)); });
}

Expected<std::vector<StatsRow>> StoreImpl::Stats(const StatsQuery& q) {
  if (q.days < 1 || q.days > 3660) return Status::Error("stats: days must be 1..3660");
  const int64_t now = q.now ? q.now : Now();
  const int64_t first_time = (now / 86400 - (q.days - 1)) * 86400;  // the first day's start
  std::string first_day = DayOf(first_time);
  const bool by_sender = q.by == StatsQuery::By::kSenderDomain;
  std::string only = q.only;
  if (q.by != StatsQuery::By::kProvider && !only.empty() && only != "<>") {
    only = NormalizeDomain(only[0] == '@' ? std::string_view(only).substr(1) : only);
    if (only.empty()) return Status::Error("stats: invalid domain '" + q.only + "'");
  }
  std::string sql;
  if (by_sender) {
    // The counted events of those days (the rows of event_days' range, as FindEvents reads
    // them), grouped as daily_counters groups them, by the sender's domain.
    const std::string key = SenderDomainSql("r.sender");
    const std::string day =
        q.per_day ? "strftime('%Y-%m-%d', r.time, 'unixepoch')" : std::string("''");
    sql = "SELECT " + key + ", " + day +
          ", k.category, k.provider_code, k.log_status, count(*) "
          "FROM event_rows r JOIN event_kinds k ON k.id = r.kind "
          "WHERE r.id >= ?4 AND r.time >= ?5 AND r.time < ?6 AND r.counted = 1 "
          "AND (?3 = '' OR " +
          key + " = ?3) GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 6 DESC, 3, 4, 5";
  } else {
    std::string col = q.by == StatsQuery::By::kDomain ? "domain" : "provider";
    std::string day_col = q.per_day ? "day" : "''";
    sql = "SELECT " + col + ", " + day_col +
          ", category, provider_code, log_status, sum(count) FROM daily_counters "
          "WHERE day >= ?1 AND day <= ?2 AND (?3 = '' OR " +
          col +
          " = ?3) "
          "GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 6 DESC, 3, 4, 5";
  }
  auto db = AcquireReader();
  if (!db) return db.status();
  ReadTxn txn(**db);  // the first id and the rows: one snapshot
  if (!txn.status()) return txn.status();
  std::vector<StatsRow> rows;
  sql::Stmt st;
  if (Status s = st.Prepare(**db, sql); !s) return s;
  st.Bind(3, only);
  if (by_sender) {
    auto first = FirstEventIdOfDays(**db, first_time);
    if (!first) return first.status();
    if (*first < 0) return rows;  // no events on those days
    st.Bind(4, *first).Bind(5, first_time).Bind(6, (now / 86400 + 1) * 86400);
  } else {
    st.Bind(1, first_day).Bind(2, DayOf(now));
  }
  if (Status walked = st.ForEachRow([&] {
        StatsRow row;
        row.key = st.Text(0);
        row.day = st.Text(1);
        row.category = st.Text(2);
        row.provider_code = st.Text(3);
        row.log_status = st.Text(4);
        row.count = st.Int(5);
        rows.push_back(std::move(row));
      });
      !walked) {
    return walked;
  }
  return rows;
}

Expected<std::vector<AllowEntry>> StoreImpl::AllowList() {
  auto db = AcquireReader();
  if (!db) return db.status();
  sql::Stmt st;
  if (Status s = st.Prepare(
          **db, "SELECT " + std::string(kAllowColumns) + " FROM allowlist ORDER BY kind, entry");
      !s) {
    return s;
  }
  std::vector<AllowEntry> out;
  if (Status walked = st.ForEachRow([&] { out.push_back(ReadAllowEntry(st)); }); !walked) {
    return walked;
  }
  return out;
}

Expected<Health> StoreImpl::GetHealth() {
  Health h;
  h.path = options_.path;
  auto db = AcquireReader();
  if (!db) return db.status();
  auto scalar = [&](std::string_view q, int64_t& out) -> Status {
    sql::Stmt st;
    if (Status s = st.Prepare(**db, q); !s) return s;
    auto r = st.Step();
    if (!r) return r.status();
    out = *r ? st.Int(0) : 0;
    return Status::Ok();
  };
  int64_t version = 0;
  {
    ReadTxn txn(**db);
    if (!txn.status()) return txn.status();
    for (auto [q, out] : {std::pair<std::string_view, int64_t*>{"PRAGMA user_version", &version},
                          {"SELECT count(*) FROM events", &h.events},
                          {"SELECT count(*) FROM suppressions", &h.suppressions},
                          {"SELECT count(*) FROM allowlist", &h.allowlist},
                          // recipient_state's rows, counted without computing each one.
                          {"SELECT (SELECT count(DISTINCT recipient_key) FROM event_rows "
                           "WHERE counted = 1 AND domain <> '') + (SELECT count(*) FROM "
                           "recipient_policy q WHERE NOT EXISTS (SELECT 1 FROM event_rows f "
                           "WHERE f.recipient_key = q.address AND f.counted = 1))",
                           &h.recipients}}) {
      if (Status s = scalar(q, *out); !s) return s;
    }
  }
  h.schema_version = static_cast<int>(version);
  {
    sql::Stmt oldest;
    if (Status s = oldest.Prepare(**db, "SELECT coalesce(min(day), '') FROM event_days"); !s) {
      return s;
    }
    auto r = oldest.Step();
    if (!r) return r.status();
    if (*r) h.oldest_event_day = oldest.Text(0);
  }
  sql::Stmt check;
  if (Status s = check.Prepare(**db, "PRAGMA quick_check"); !s) return s;
  std::string detail;
  for (;;) {
    auto r = check.Step();
    if (!r) {
      detail = r.error();
      break;
    }
    if (!*r) break;
    if (!detail.empty()) detail += "; ";
    detail += check.Text(0);
  }
  h.integrity_ok = detail == "ok";
  h.integrity_detail = detail;
  {
    std::lock_guard lock(queue_mu_);
    h.queued_batches = static_cast<int64_t>(queue_.size());
    h.last_write_error = last_write_error_;
  }
  {
    std::lock_guard lock(policy_mu_);
    h.retention = retention_;
  }
  h.pruned = Pruned();
  return h;
}

}  // namespace bounced::store_detail
