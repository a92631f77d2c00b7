// store_manual.cc: the store's manual changes (store_impl.h): suppress, unsuppress (one address
// or a selection), allow, disallow and import, each run on the writer in its own transaction and
// audited.
#include "storage/store_impl.h"
#include "storage/suppression_io.h"

namespace bounced::store_detail {

Expected<Suppression> StoreImpl::Suppress(const ManualSuppression& m, const Actor& who) {
  std::string key = NormalizeAddress(m.address, Delimiters());
  if (key.empty()) return Status::Error("suppress: invalid address '" + m.address + "'");
  if (who.reason.empty()) return Status::Error("suppress: a reason is required");
  if (!m.category.empty() && !CategoryFromName(m.category)) {
    return Status::Error("suppress: unknown category '" + m.category + "'");
  }
  auto out = std::make_shared<Suppression>();
  Status st = RunOnWriter([&](StoreImpl& self) -> Status {
    auto allowed = self.AllowedW(key);
    if (!allowed) return allowed.status();
    if (*allowed) {
      return Status::Error("suppress: " + key + " is on the allowlist; disallow it first");
    }
    auto existing = self.GetSuppressionW(key);
    if (!existing) return existing.status();
    Suppression s;
    bool live = *existing && ((*existing)->expires == 0 || (*existing)->expires > txn_now_);
    if (live) s = **existing;
    s.address = key;
    if (s.display.empty()) s.display = m.address;
    s.reason = who.reason;
    s.category = m.category.empty() && live ? s.category : m.category;
    s.source = "manual";
    if (!live) s.created = txn_now_;
    s.expires = m.expires;
    s.detail = "manual: uid " + std::to_string(who.uid);
    if (Status r = self.PutSuppressionW(s, live ? "update" : "add", who); !r) return r;
    if (Status r = self.AuditW(who, "suppress", key, s.category); !r) return r;
    *out = s;
    return Status::Ok();
  });
  if (!st) return st;
  return *out;
}

Expected<std::string> StoreImpl::Unsuppress(std::string_view address, const Actor& who) {
  std::string key = NormalizeAddress(address, Delimiters());
  if (key.empty())
    return Status::Error("unsuppress: invalid address '" + std::string(address) + "'");
  if (who.reason.empty()) return Status::Error("unsuppress: a reason is required");
  // An entry stored while other extension delimiters were in force ([policy] plus_extension
  // turned on since: a+x@b is stored so, and lookups now ask for a@b) is reached by its own
  // spelling only; no lookup matches it any more, and this is how it is lifted.
  const std::string exact = NormalizeAddress(address, "");
  Status done = RunOnWriter([&](StoreImpl& self) -> Status {
    auto existing = self.GetSuppressionW(key);
    if (!existing) return existing.status();
    if (!*existing && !exact.empty() && exact != key) {
      existing = self.GetSuppressionW(exact);
      if (!existing) return existing.status();
      if (*existing) key = exact;
    }
    if (!*existing) return Status::Error("unsuppress: " + key + " is not suppressed");
    return self.LiftW(key, **existing, who);
  });
  if (!done) return done;
  return key;
}

Status StoreImpl::LiftW(const std::string& key, const Suppression& existing, const Actor& who) {
  w_.delete_suppression.Bind(1, key);
  if (Status r = w_.delete_suppression.Run(); !r) return r;
  if (Status r = LogSuppressionW(existing, "remove", who); !r) return r;
  PolicyRow& state = PolicyRowW(HashedKey::Of(key));
  state.fields = PolicyFields{};
  state.fields.manual_unsuppressed = txn_now_;
  if (state.first_seen == 0) {
    // A recipient without events is first seen now (its events set first_seen otherwise).
    w_.has_events.BindRef(1, key);
    auto any = w_.has_events.Step();
    bool seen = any && *any;
    w_.has_events.Reset();
    if (!any) return any.status();
    if (!seen) {
      state.first_seen = txn_now_;
      state.display = existing.display;
    }
  }
  if (Status r = AuditW(who, "unsuppress", key, existing.source + ": " + existing.reason); !r) {
    return r;
  }
  pending_->push_back(ViewChange{ViewChange::kErase, key, {}});
  return Status::Ok();
}

Expected<BulkUnsuppressResult> StoreImpl::UnsuppressMatching(const ListFilter& filter,
                                                             const Actor& who, bool dry_run) {
  if (!dry_run && who.reason.empty()) return Status::Error("unsuppress: a reason is required");
  ListFilter f = filter;
  f.after.clear();
  f.limit = 0;
  f.include_expired = false;
  BulkUnsuppressResult out;
  if (dry_run) {
    Status listed = List(f, [&](const Suppression& s) {
      if (out.sample.size() < BulkUnsuppressResult::kBulkSample) out.sample.push_back(s.address);
      ++out.count;
      return true;
    });
    if (!listed) return listed;
    return out;
  }
  Status done = RunOnWriter([&](StoreImpl& self) -> Status {
    // The keys first (a statement that steps over the rows it deletes has no defined result),
    // then each entry, read again by key, lifted.
    std::vector<std::string> keys;
    sql::Stmt st;
    if (Status r = PrepareList(self.wdb_, f, self.txn_now_, &st); !r) return r;
    if (Status walked = st.ForEachRow([&] {
          keys.push_back(st.Text(0));
          return true;
        });
        !walked) {
      return walked;
    }
    for (const std::string& key : keys) {
      auto existing = self.GetSuppressionW(key);
      if (!existing) return existing.status();
      if (!*existing) continue;
      if (Status r = self.LiftW(key, **existing, who); !r) return r;
      if (out.sample.size() < BulkUnsuppressResult::kBulkSample) out.sample.push_back(key);
      ++out.count;
    }
    return Status::Ok();
  });
  if (!done) return done;
  return out;
}

Expected<AllowEntry> StoreImpl::Allow(std::string_view entry, const Actor& who) {
  AllowEntry a;
  if (entry.find('@') != std::string_view::npos && entry.front() != '@') {
    a.entry = NormalizeAddress(entry, Delimiters());
  } else {
    a.entry = NormalizeDomain(entry.front() == '@' ? entry.substr(1) : entry);
    a.domain = true;
  }
  if (entry.empty() || a.entry.empty()) {
    return Status::Error("allow: '" + std::string(entry) + "' is neither an address nor a domain");
  }
  a.reason = who.reason;
  a.actor_uid = who.uid;
  Status st = RunOnWriter([&](StoreImpl& self) -> Status {
    a.created = self.txn_now_;
    sql::Stmt ins;
    if (Status r = ins.Prepare(self.wdb_,
                               "INSERT OR REPLACE INTO allowlist (entry, kind, reason, created, "
                               "actor_uid) VALUES (?1, ?2, ?3, ?4, ?5)");
        !r) {
      return r;
    }
    ins.Bind(1, a.entry).Bind(2, a.domain ? "domain" : "address").Bind(3, a.reason);
    ins.Bind(4, a.created).Bind(5, a.actor_uid);
    if (Status r = ins.Run(); !r) return r;
    self.txn_allowlist_changed_ = true;
    if (Status r = self.AuditW(who, "allow", a.entry, a.domain ? "domain" : "address"); !r) {
      return r;
    }
    self.pending_->push_back(
        ViewChange{a.domain ? ViewChange::kAllowDomain : ViewChange::kAllowAddress, a.entry, {}});
    return Status::Ok();
  });
  if (!st) return st;
  return a;
}

Status StoreImpl::Disallow(std::string_view entry, const Actor& who) {
  std::string key;
  if (entry.find('@') != std::string_view::npos && entry.front() != '@') {
    key = NormalizeAddress(entry, Delimiters());
  } else if (!entry.empty()) {
    key = NormalizeDomain(entry.front() == '@' ? entry.substr(1) : entry);
  }
  if (key.empty()) {
    return Status::Error("disallow: '" + std::string(entry) +
                         "' is neither an address nor a domain");
  }
  return RunOnWriter([&](StoreImpl& self) -> Status {
    sql::Stmt del;
    if (Status r = del.Prepare(self.wdb_, "DELETE FROM allowlist WHERE entry = ?1 RETURNING kind");
        !r) {
      return r;
    }
    del.Bind(1, key);
    auto row = del.Step();
    if (!row) return row.status();
    if (!*row) return Status::Error("disallow: " + key + " is not on the allowlist");
    bool domain = del.TextView(0) == "domain";
    del.Reset();
    self.txn_allowlist_changed_ = true;
    if (Status r = self.AuditW(who, "disallow", key, domain ? "domain" : "address"); !r) return r;
    self.pending_->push_back(
        ViewChange{domain ? ViewChange::kDisallowDomain : ViewChange::kDisallowAddress, key, {}});
    return Status::Ok();
  });
}

Expected<ImportResult> StoreImpl::Import(ExportFormat format, std::string_view data,
                                         const Actor& who, const ImportOptions& options) {
  // Two passes over the text instead of a parsed copy of it: the first checks every line (all
  // or nothing: any error and nothing is written), the second parses again inside the writer's
  // transaction and writes each entry as it is read. A million-line import so holds the text
  // and one entry at a time, not a million parsed entries (~1 GB). The first pass keeps each
  // entry's category (a byte), so that the second, on the writer, does not classify again.
  const std::string delimiters = Delimiters();
  const int64_t now = Now();
  size_t entries = 0;
  std::vector<uint8_t> categories;
  constexpr uint8_t kNoCategory = kCategoryCount;
  std::array<size_t, kCategoryCount + 1> per_category{};
  ImportResult result;
  // A dry run counts what would be added and updated as the writer would (an address twice in
  // the file is updated the second time), in one snapshot of the list.
  Reader reader(nullptr, ReaderDeleter{this});
  std::optional<ReadTxn> snapshot;
  sql::Stmt exists;
  std::unordered_set<std::string> seen;
  Status looked_up = Status::Ok();
  if (options.dry_run) {
    auto db = AcquireReader();
    if (!db) return db.status();
    reader = std::move(*db);
    snapshot.emplace(*reader);
    if (!snapshot->status()) return snapshot->status();
    if (Status s = exists.Prepare(*reader, "SELECT 1 FROM suppressions WHERE address = ?1"); !s) {
      return s;
    }
  }
  ParsedImport checked = ParseImportEach(
      format, data, delimiters, now,
      [&](Suppression&& s) {
        ++entries;
        auto c = CategoryFromName(s.category);
        const uint8_t index = c ? static_cast<uint8_t>(*c) : kNoCategory;
        ++per_category[index];
        if (!options.dry_run) {
          categories.push_back(index);
          return;
        }
        if (!looked_up) return;
        bool existed = !seen.insert(s.address).second;
        if (!existed) {
          exists.Bind(1, s.address);
          auto row = exists.Step();
          exists.Reset();
          if (!row) looked_up = row.status();
          existed = row && *row;
        }
        ++(existed ? result.updated : result.added);
      },
      options);
  for (size_t i = 0; i < per_category.size(); ++i) {
    if (per_category[i] == 0) continue;
    result.categories[i == kNoCategory ? std::string()
                                       : std::string(ToString(static_cast<Category>(i)))] =
        per_category[i];
  }
  result.ignored_columns = std::move(checked.ignored_columns);
  result.categorized = checked.categorized;
  if (!checked.errors.empty()) {
    result.errors = std::move(checked.errors);
    return result;
  }
  if (options.dry_run) {
    if (!looked_up) return looked_up;
    return result;
  }
  Status st = RunOnWriter([&](StoreImpl& self) -> Status {
    result.added = result.updated = 0;  // a rerun starts over
    Status failed = Status::Ok();
    size_t n = 0;
    ImportOptions unclassified = options;
    unclassified.classify = nullptr;
    ParsedImport again = ParseImportEach(
        format, data, delimiters, now,
        [&](Suppression&& s) {
          if (!failed) return;
          const uint8_t c = n < categories.size() ? categories[n] : kNoCategory;
          ++n;
          s.category = c == kNoCategory ? "" : std::string(ToString(static_cast<Category>(c)));
          auto existing = self.GetSuppressionW(s.address);
          if (!existing) {
            failed = existing.status();
            return;
          }
          bool update = existing->has_value();
          if (update) {
            result.updated++;
          } else {
            result.added++;
          }
          failed = self.PutSuppressionW(s, update ? "update" : "add", who);
        },
        unclassified);
    if (!failed) return failed;
    if (!again.errors.empty()) return Status::Error("import: " + again.errors.front());
    return self.AuditW(
        who, "import", std::to_string(entries) + " entries",
        std::to_string(result.added) + " added, " + std::to_string(result.updated) + " updated");
  });
  if (!st) return st;
  return result;
}

}  // namespace bounced::store_detail
