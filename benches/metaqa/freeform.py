#!/usr/bin/env python3
"""Free-form MetaQA questions: phrasings written by hand, unlike MetaQA's
templates, for each of its path types; answers by exact traversal of the KB.

    python3 benches/metaqa/freeform.py --kb $DATA/metaqa/kb.tsv --out benches/metaqa/freeform

writes FREEFORM/bracketed.txt (the topic entity in [brackets]) and
FREEFORM/plain.txt (the same questions without brackets), MetaQA format
(`question<TAB>answer|answer`), plus FREEFORM/paths.tsv (each question's
gold chain). Deterministic for a given KB and --seed. Topics are drawn among
entities whose answer set is non-empty and at most --max-answers long; a
projection never returns the entities it started from (kgbox's default,
`exclude_anchors`), as MetaQA's answers do not include the topic.
"""

import argparse
import collections
import random
import sys
from pathlib import Path

# (path, phrasings); {e} is the topic entity.
PHRASES = [
    # 1-hop
    ("directed_by", [
        "I'd like to know who was behind the camera for {e}",
        "which filmmaker made {e}",
        "tell me the name of the person who directed the movie {e}",
        "{e} - who was its director?",
        "can you name the director responsible for {e}",
    ]),
    ("written_by", [
        "who penned the screenplay of {e}",
        "which writer is credited on {e}",
        "tell me who wrote the script for {e}",
        "name the author behind the film {e}",
    ]),
    ("starred_actors", [
        "which actors can I see in {e}",
        "who had roles in {e}",
        "give me the cast of {e}",
        "name someone who performed in the film {e}",
        "who were the stars of {e}",
    ]),
    ("has_genre", [
        "what sort of film is {e}",
        "how would you classify {e} by genre",
        "into which genre does {e} fall",
        "is {e} a comedy, a drama or something else?",
    ]),
    ("release_year", [
        "in what year did {e} hit theaters",
        "when did {e} first come out",
        "what's the release year for {e}",
        "how old is {e}, which year was it released",
    ]),
    ("in_language", [
        "which language do the characters speak in {e}",
        "what language was {e} made in",
        "in what tongue is {e}",
        "if I watch {e}, which language will I hear",
    ]),
    ("directed_by_inv", [
        "which movies did {e} direct",
        "list films made by director {e}",
        "what has {e} directed",
        "name a film {e} was the director of",
    ]),
    ("written_by_inv", [
        "what films did {e} write",
        "which screenplays came from {e}",
        "list the movies {e} has writing credits on",
        "tell me a movie scripted by {e}",
    ]),
    ("starred_actors_inv", [
        "which films has {e} acted in",
        "what movies feature {e}",
        "in which pictures did {e} have a role",
        "name some films with {e} in the cast",
    ]),
    ("has_tags", [
        "what topics is {e} tagged with",
        "which keywords describe {e}",
    ]),
    ("has_tags_inv", [
        "which movies carry the tag {e}",
        "find films tagged {e}",
    ]),
    # 2-hop
    ("directed_by -> directed_by_inv", [
        "what else did the director of {e} make",
        "which other films come from the filmmaker behind {e}",
        "name more movies by whoever directed {e}",
    ]),
    ("directed_by_inv -> directed_by", [
        "who co-directed films with {e}",
        "which directors shared a directing credit with {e}",
    ]),
    ("directed_by_inv -> has_genre", [
        "what genres does {e} work in as a director",
        "which kinds of movies has {e} directed",
    ]),
    ("directed_by_inv -> in_language", [
        "which languages are the films directed by {e} in",
        "in what languages has {e} directed movies",
    ]),
    ("directed_by_inv -> release_year", [
        "in which years did films directed by {e} come out",
        "when were the movies {e} directed released",
    ]),
    ("directed_by_inv -> starred_actors", [
        "which actors have appeared in films {e} directed",
        "who has {e} cast in their movies as director",
    ]),
    ("directed_by_inv -> written_by", [
        "who wrote the movies that {e} directed",
        "which screenwriters worked on films directed by {e}",
    ]),
    ("starred_actors -> starred_actors_inv", [
        "what other films did the cast of {e} appear in",
        "which movies share an actor with {e}",
        "if I liked the actors in {e}, what else are they in",
    ]),
    ("starred_actors_inv -> directed_by", [
        "which directors has {e} worked with",
        "who directed the films that {e} acted in",
    ]),
    ("starred_actors_inv -> has_genre", [
        "what kinds of movies does {e} act in",
        "which genres are {e}'s films",
    ]),
    ("starred_actors_inv -> in_language", [
        "in which languages has {e} acted",
        "what languages are the movies starring {e} in",
    ]),
    ("starred_actors_inv -> release_year", [
        "in which years were films with {e} released",
        "when did the movies {e} appeared in come out",
    ]),
    ("starred_actors_inv -> starred_actors", [
        "who has shared the screen with {e}",
        "which actors appeared alongside {e}",
    ]),
    ("starred_actors_inv -> written_by", [
        "who wrote the films {e} starred in",
        "name the writers of movies featuring {e}",
    ]),
    ("written_by -> written_by_inv", [
        "what other movies did the screenwriter of {e} write",
        "which films share a writer with {e}",
    ]),
    ("written_by_inv -> directed_by", [
        "who directed the scripts {e} wrote",
        "which directors filmed screenplays by {e}",
    ]),
    ("written_by_inv -> has_genre", [
        "what genres does {e} write",
        "which genres are the films written by {e}",
    ]),
    ("written_by_inv -> in_language", [
        "what languages are {e}'s screenplays filmed in",
        "in which languages were films written by {e} made",
    ]),
    ("written_by_inv -> release_year", [
        "when did the movies written by {e} come out",
        "in what years were {e}'s scripts released as films",
    ]),
    ("written_by_inv -> starred_actors", [
        "who acted in films that {e} wrote",
        "which actors appear in movies scripted by {e}",
    ]),
    ("written_by_inv -> written_by", [
        "who has {e} co-written films with",
        "which writers collaborated with {e} on a script",
    ]),
    # 3-hop
    ("directed_by -> directed_by_inv -> has_genre", [
        "what genres are the other films by the director of {e}",
        "which kinds of movies does the person who directed {e} make",
        "the filmmaker of {e} also makes films of what genres",
    ]),
    ("directed_by -> directed_by_inv -> in_language", [
        "which languages are the other movies by {e}'s director in",
        "in what languages does the director of {e} make films",
    ]),
    ("directed_by -> directed_by_inv -> release_year", [
        "when were the other films by the director of {e} released",
        "in which years did {e}'s director put out other movies",
    ]),
    ("directed_by -> directed_by_inv -> starred_actors", [
        "who acted in other movies by the director of {e}",
        "which actors has the director of {e} worked with elsewhere",
        "name performers from other films made by whoever directed {e}",
    ]),
    ("directed_by -> directed_by_inv -> written_by", [
        "who wrote the other films directed by the director of {e}",
        "which screenwriters has the filmmaker of {e} worked with on other movies",
    ]),
    ("starred_actors -> starred_actors_inv -> directed_by", [
        "who directed the other films that the actors of {e} were in",
        "which directors made movies with the cast of {e}",
        "name the directors of films sharing actors with {e}",
    ]),
    ("starred_actors -> starred_actors_inv -> has_genre", [
        "what genres are the movies that share actors with {e}",
        "the cast of {e} also appears in films of which genres",
    ]),
    ("starred_actors -> starred_actors_inv -> in_language", [
        "which languages are spoken in other movies with the actors of {e}",
        "in what languages are films that share a cast member with {e}",
    ]),
    ("starred_actors -> starred_actors_inv -> release_year", [
        "when were the films sharing actors with {e} released",
        "in which years did the cast of {e} make other movies",
    ]),
    ("starred_actors -> starred_actors_inv -> written_by", [
        "who wrote the other movies that {e}'s actors appeared in",
        "name the writers of films sharing a cast member with {e}",
    ]),
    ("written_by -> written_by_inv -> directed_by", [
        "who directed the other scripts by the writer of {e}",
        "which directors filmed other work by {e}'s screenwriter",
        "the screenwriter of {e} wrote other films; who directed them",
    ]),
    ("written_by -> written_by_inv -> has_genre", [
        "what genres are the other films by the writer of {e}",
        "which kinds of movies does {e}'s screenwriter also write",
    ]),
    ("written_by -> written_by_inv -> in_language", [
        "in which languages are the other films by {e}'s writer",
        "what languages are other movies written by the author of {e} in",
    ]),
    ("written_by -> written_by_inv -> release_year", [
        "when did the other films by the writer of {e} come out",
        "in which years were other scripts by {e}'s screenwriter released",
    ]),
    ("written_by -> written_by_inv -> starred_actors", [
        "who acted in the other films written by the writer of {e}",
        "which actors appear in other movies by {e}'s screenwriter",
    ]),
]

PER_HOP = 50


def load(kb):
    out = collections.defaultdict(lambda: collections.defaultdict(set))
    for line in open(kb, encoding="utf-8"):
        line = line.rstrip("\n")
        parts = line.split("\t") if "\t" in line else line.split("|")
        if len(parts) != 3:
            continue
        h, r, t = parts
        out[r][h].add(t)
        out[r + "_inv"][t].add(h)
    return out


def traverse(graph, topic, path):
    current = {topic}
    for r in path:
        step = set()
        for e in current:
            step |= graph[r].get(e, set())
        current = step - {topic}
    return current


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", required=True, help="MetaQA kb.tsv (head<TAB>relation<TAB>tail lines)")
    ap.add_argument("--out", required=True, help="folder for bracketed.txt, plain.txt, paths.tsv")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-answers", type=int, default=30)
    args = ap.parse_args()
    graph = load(args.kb)
    if not graph:
        sys.exit(f"freeform.py: no head<TAB>relation<TAB>tail lines in {args.kb}")
    rng = random.Random(args.seed)
    by_hop = collections.defaultdict(list)
    for path_text, phrasings in PHRASES:
        path = [p.strip() for p in path_text.split("->")]
        for ph in phrasings:
            by_hop[len(path)].append((path, ph))
    rows = []
    used = set()
    for hop in (1, 2, 3):
        pairs = by_hop[hop]
        rng.shuffle(pairs)
        for i in range(PER_HOP):
            path, ph = pairs[i % len(pairs)]
            starts = sorted(graph[path[0]].keys())
            for _ in range(1000):
                topic = rng.choice(starts)
                if topic in used or "[" in topic or "]" in topic or "|" in topic:
                    continue
                answers = traverse(graph, topic, path)
                if 0 < len(answers) <= args.max_answers:
                    break
            else:
                sys.exit(f"freeform.py: no topic with 1..{args.max_answers} answers for {path}")
            used.add(topic)
            rows.append((hop, ph, topic, path, sorted(answers)))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "bracketed.txt", "w", encoding="utf-8") as b, \
            open(out / "plain.txt", "w", encoding="utf-8") as p, \
            open(out / "paths.tsv", "w", encoding="utf-8") as t:
        t.write("# hop\tquestion\ttopic\tpath\n")
        for hop, ph, topic, path, answers in rows:
            ans = "|".join(answers)
            b.write(f"{ph.format(e='[' + topic + ']')}\t{ans}\n")
            p.write(f"{ph.format(e=topic)}\t{ans}\n")
            t.write(f"{hop}\t{ph.format(e='[' + topic + ']')}\t{topic}\t{' -> '.join(path)}\n")
    counts = collections.Counter(r[0] for r in rows)
    print(f"freeform.py: wrote {len(rows)} questions to {out} "
          f"(1-hop {counts[1]}, 2-hop {counts[2]}, 3-hop {counts[3]})")


if __name__ == "__main__":
    main()
