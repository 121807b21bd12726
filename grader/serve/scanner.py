"""The scanner: the inbound folders' new hand-ins, each folder judged once, in bounded work per pass.

    scanner = Scanner(identity, exchange, known, Limits(), skip=queue.known())
    found = scanner.scan()     # [Found(source, arrival, key, lstat)]: judged complete this pass
    scanner.counts             # this pass's work and the totals (the service's status line shows them)

A student writes whatever they like into inbound: 100,000 folders, names that parse as nothing, folders that
never complete. What one pass does is bounded, whatever is there:
- an inbound folder is listed again only when its mtime changed (or every `relist` seconds); a name seen
  before with the same inode is never looked at again: each name is parsed once, each folder judged once;
- at most `looks` new names are parsed and lstat-ed per pass; a name that does not parse, or whose folder is
  not its student's (identity.py), is remembered as ignored, before anything of it is opened or queued;
- of each account's folders at most `per_account` are judged per pass, round robin over the accounts
  (`per_pass` in all): another student's 20,000 folders never stand before yours;
- an unfinished folder is judged again each pass its mtime moved (every pass once its secret file is there
  but not complete), at most `watched_per_account` of one account and `watched` in all (the longest watched
  dropped first); more are ignored (the student's own loss). The account is the OS account that wrote the
  folder (or the hub user whose inbound it is): 100,000 made-up names of one account are one account.
"""
from __future__ import annotations

import contextlib
import os
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path

from grader.serve.identity import Identity, Source
from grader.serve.inbound import DIR_FLAGS, Arrival, judge, parse


NOTES = {"name": 20, "other": 5}   # ignored names logged per pass, by kind


@dataclass
class Limits:
    looks: int = 50_000              # new names parsed (and lstat-ed) per pass
    per_account: int = 20            # folders of one account judged per pass
    per_pass: int = 2_000            # folders judged per pass in all
    watched_per_account: int = 4     # unfinished folders of one account judged again each pass
    watched: int = 2_000             # unfinished folders judged again each pass in all
    relist: float = 30.0             # seconds between listings when the folder's mtime says nothing changed


@dataclass
class Counts:
    passes: int = 0
    listings: int = 0                # listings of an inbound folder so far
    listed: int = 0                  # entries in the inbound folders, at their last listing
    parsed: int = 0                  # names parsed so far (each new name once)
    judged: int = 0                  # folders judged so far
    found: int = 0                   # complete hand-ins found so far
    ignored: int = 0                 # names that are no hand-in of their own student's (so far)
    watched: int = 0                 # unfinished folders watched now
    backlog: int = 0                 # folders waiting for their account's turn now
    pass_parsed: int = 0             # the last pass's work
    pass_judged: int = 0
    pass_seconds: float = 0.0
    last_scan: float = 0.0           # time.time() at the end of the last pass


@dataclass
class Found:
    source: Source
    arrival: Arrival
    key: str                         # the hand-in's name in the queue
    st: os.stat_result               # the folder's lstat when it was judged complete


@dataclass
class _Item:
    source: Source
    name: str
    ino: int
    arrival: Arrival
    account: str
    mtime: int | None = None         # the folder's mtime when it had no secret file yet (None: look every pass)


@dataclass
class _Listing:
    source: Source
    seen: dict[str, int] = field(default_factory=dict)   # name -> inode: looked at, or waiting to be
    fresh: deque = field(default_factory=deque)           # (name, inode) listed, not parsed yet
    mtime: int | None = None
    listed_at: float = 0.0


@contextlib.contextmanager
def _opened(path: Path):
    fd = os.open(path, DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


class Scanner:
    def __init__(self, identity: Identity, exchange: Path, known, limits: Limits | None = None,
                 skip: set[str] = frozenset()):
        self.identity, self.exchange, self.known = identity, exchange, known
        self.limits = limits or Limits()
        self.skip = set(skip)                      # queue keys the queue already holds
        self.counts = Counts()
        self.notes: list[str] = []                 # a few of this pass's ignored names, for the log
        self._shown: dict[str, int] = {}
        self._listings: dict[Path, _Listing] = {}
        self._backlog: dict[str, deque] = {}       # account -> _Items to judge
        self._watched: OrderedDict[tuple[Path, str], _Item] = OrderedDict()
        self._watching: dict[str, int] = {}        # account -> how many of its folders are watched

    def scan(self) -> list[Found]:
        began, lim = time.monotonic(), self.limits
        self.notes, self._shown, c = [], {}, self.counts
        sources = self.identity.sources(self.exchange)
        self._listings = {s.path: self._listings.get(s.path) or _Listing(s) for s in sources}
        for listing in self._listings.values():
            self._list(listing)
        parsed = self._look(lim.looks)
        found, judged = self._judge()
        c.passes += 1
        c.parsed += parsed
        c.judged += judged
        c.found += len(found)
        c.pass_parsed, c.pass_judged = parsed, judged
        c.listed = sum(len(li.seen) for li in self._listings.values())
        c.watched, c.backlog = len(self._watched), sum(map(len, self._backlog.values()))
        c.pass_seconds, c.last_scan = time.monotonic() - began, time.time()
        return found

    def _note(self, name: str, why: str, kind: str = "other") -> None:
        """Count an ignored name; the first few of each kind per pass go into the log (names that parse as
        nothing are rare from honest tools, so more of them are shown)."""
        self.counts.ignored += 1
        shown = self._shown.get(kind, 0)
        if shown < NOTES.get(kind, 5):
            self._shown[kind] = shown + 1
            self.notes.append(f"ignored {name!r}: {why}")

    def _list(self, listing: _Listing) -> None:
        """New (name, inode) pairs into listing.fresh; names gone forgotten. Skipped when nothing changed."""
        try:
            with _opened(listing.source.path) as fd:
                mtime, now = os.fstat(fd).st_mtime_ns, time.time()
                settled = now - mtime / 1e9 > 1.0    # an entry made within the clock's granularity is seen next time
                if mtime == listing.mtime and settled and now - listing.listed_at < self.limits.relist:
                    return
                current = {}
                with os.scandir(fd) as entries:
                    for entry in entries:
                        current[entry.name] = entry.inode()
        except OSError:
            return
        listing.mtime, listing.listed_at = mtime, now
        self.counts.listings += 1
        for name in [n for n in listing.seen if n not in current]:
            del listing.seen[name]
        for name, ino in current.items():
            if listing.seen.get(name) != ino:
                listing.seen[name] = ino
                listing.fresh.append((name, ino))

    def _look(self, budget: int) -> int:
        """Parse up to budget new names (round robin over the inbound folders), lstat the ones that parse, and
        put each folder that may be its student's into its account's backlog. Return how many were parsed."""
        parsed, known = 0, self.known()
        listings = [li for li in self._listings.values() if li.fresh]
        while listings and parsed < budget:
            for listing in list(listings):
                if not listing.fresh:
                    listings.remove(listing)
                    continue
                name, ino = listing.fresh.popleft()
                parsed += 1
                self._look_at(listing, name, ino, known)
        return parsed

    def _look_at(self, listing: _Listing, name: str, ino: int, known) -> None:
        source = listing.source
        arrival = parse(name, known)
        if arrival is None:
            self._note(name, "not a hand-in's name", "name")
            return
        if source.key(name) in self.skip:
            return
        try:
            st = os.stat(source.path / name, follow_symlinks=False)
        except (OSError, ValueError):
            return
        if st.st_ino != ino:
            return                                  # replaced since the listing: the next listing brings it back
        account = self.identity.account(arrival, source, st)
        if account is None:
            self._note(name, f"not {arrival.student}'s own folder ({self.identity.mode})")
            return
        self._backlog.setdefault(account, deque()).append(_Item(source, name, ino, arrival, account))

    def _judge(self) -> tuple[list[Found], int]:
        """Round robin over the accounts: each account's new folders, then its unfinished ones, per_account of
        them per pass, per_pass in all."""
        lim, found, judged = self.limits, [], 0
        work: dict[str, list[_Item]] = {}
        for item in self._watched.values():
            if item.mtime is None or self._changed(item):
                work.setdefault(item.account, []).append(item)
        accounts = list(dict.fromkeys([*self._backlog, *work]))
        turns = {a: lim.per_account for a in accounts}
        while accounts and judged < lim.per_pass:
            for account in list(accounts):
                queue = self._backlog.get(account)
                while queue and not self._still_listed(queue[0]):
                    queue.popleft()               # gone (or replaced) since it was listed: costs no turn
                if queue:
                    item = queue.popleft()
                elif work.get(account):
                    item = work[account].pop(0)
                else:
                    accounts.remove(account)
                    continue
                judged += 1
                turns[account] -= 1
                if turns[account] == 0:
                    accounts.remove(account)
                outcome = self._judge_one(item)
                if outcome is not None:
                    found.append(outcome)
                if judged >= lim.per_pass:
                    break
        for account in [a for a, q in self._backlog.items() if not q]:
            del self._backlog[account]
        return found, judged

    def _changed(self, item: _Item) -> bool:
        """Whether a folder without a secret file may have one now (its mtime moved, or it is gone)."""
        try:
            return os.stat(item.source.path / item.name, follow_symlinks=False).st_mtime_ns != item.mtime
        except OSError:
            return True

    def _still_listed(self, item: _Item) -> bool:
        listing = self._listings.get(item.source.path)
        return listing is not None and listing.seen.get(item.name) == item.ino

    def _judge_one(self, item: _Item) -> Found | None:
        where = (item.source.path, item.name)
        try:
            with _opened(item.source.path) as fd:
                verdict, info = judge(fd, item.name, self.identity.owner(item.arrival))
        except OSError:
            verdict, info = "gone", None
        if verdict in ("incomplete", "waiting") and info.st_ino == item.ino:
            item.mtime = info.st_mtime_ns if verdict == "waiting" else None
            self._watch(where, item)
            return None
        if self._watched.pop(where, None) is not None:
            self._unwatched(item)
        if verdict == "complete" and info.st_ino == item.ino:
            return Found(item.source, item.arrival, item.source.key(item.name), info)
        if verdict == "rejected":
            self._note(item.name, str(info))
        elif verdict != "gone":       # replaced by another folder under the same name: look at it afresh
            listing = self._listings.get(item.source.path)
            if listing is not None:
                listing.seen.pop(item.name, None)
                listing.mtime = None
        return None

    def _watch(self, where, item: _Item) -> None:
        if where in self._watched:
            return                                   # keeps its place: the longest watched is dropped first
        mine = self._watching.get(item.account, 0)
        if mine >= self.limits.watched_per_account:
            self._note(item.name, f"more than {self.limits.watched_per_account} unfinished folders of one account")
            return
        self._watched[where] = item
        self._watching[item.account] = mine + 1
        while len(self._watched) > self.limits.watched:
            (_, old_name), old = self._watched.popitem(last=False)
            self._unwatched(old)
            self._note(old_name, "unfinished for too long while many others wait")

    def _unwatched(self, item: _Item) -> None:
        left = self._watching.get(item.account, 1) - 1
        if left:
            self._watching[item.account] = left
        else:
            self._watching.pop(item.account, None)
