#!/usr/bin/env python3
"""Free-form MetaQA questions, set B: a second, fresh hand-written phrase table
for testing a question planner on wording it was never tuned on.

    python3 benches/metaqa/freeform_b.py --kb $DATA/metaqa/kb.tsv \\
        --out benches/metaqa/freeform-b --avoid benches/metaqa/freeform/paths.tsv

PHRASES_B covers the same path types as freeform.py's PHRASES (every 1-hop
relation and inverse there, every 2-hop and 3-hop chain there), 7 phrasings
each, written the way different people ask: casual and formal, questions and
imperatives, with vocabulary MetaQA's templates never use (filmmaker, helmed,
screenwriter, cast, flicks, tongue, pictures ...). No phrasing repeats, or is
a mere word swap of, one in PHRASES or in MetaQA's own templates.

Outputs have the same formats as freeform.py's: OUT/bracketed.txt (topic in
[brackets]), OUT/plain.txt (no brackets), both `question<TAB>answer|answer`,
and OUT/paths.tsv (hop, bracketed question, topic, gold chain); 50 questions
per hop. KB loading and traversal (answers exclude the topic, as kgbox's
`exclude_anchors` and MetaQA do) are imported from freeform.py. Its main()
reads the module-level PHRASES and has no phrase-table parameter, so the
sampling/writing loop is re-done here, with two changes: phrasings are taken
round-robin over path types, so every path type gets questions in every hop;
and --avoid skips topics already used by another set's paths.tsv (pass the
first set's, as above, to keep the two sets' topics disjoint). Deterministic
for a given KB, --seed and --avoid file.
"""

import argparse
import collections
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from freeform import PER_HOP, load, traverse  # noqa: E402

# (path, phrasings); {e} is the topic entity.
PHRASES_B = [
    # 1-hop
    ("directed_by", [
        "who was at the helm for {e}?",
        "{e} was helmed by which filmmaker",
        "Please identify the director of the film {e}.",
        "I'm trying to remember who directed {e}, any idea?",
        "whose directorial work is {e}",
        "Who's responsible for directing {e}?",
        "{e}: director?",
    ]),
    ("written_by", [
        "screenwriting credit on {e} goes to whom?",
        "who came up with the script of {e}",
        "Identify the writers of {e}.",
        "I need the writing credits for {e}",
        "{e} was scripted by whom?",
        "who did the writing on {e}",
        "the script for {e} - who's it by?",
    ]),
    ("starred_actors", [
        "who's in {e}?",
        "List the cast members of {e}.",
        "which performers show up in {e}",
        "Name the leading actors and actresses of {e}.",
        "who plays in {e}",
        "I want the cast list for {e}",
        "who was cast in {e}",
    ]),
    ("has_genre", [
        "{e} - which genre would that be?",
        "what genre label does {e} carry",
        "Tell me which category of cinema {e} belongs to.",
        "if I put on {e}, what genre am I in for",
        "Which genre category is {e} listed under?",
        "genre of {e}?",
        "I'm curious what genre {e} belongs to",
    ]),
    ("release_year", [
        "what year did {e} come out",
        "{e} premiered in which year?",
        "Which year saw the release of {e}?",
        "when was {e} out in cinemas",
        "remind me when {e} dropped",
        "Give me the year {e} debuted.",
        "{e} dates from what year",
    ]),
    ("in_language", [
        "What's the original tongue of {e}?",
        "is {e} in English or some other language?",
        "What language is the dialogue of {e} in?",
        "do I need subtitles for {e}, what language is it",
        "Specify the original language of {e}.",
        "in which language was {e} shot",
        "{e}: what language?",
    ]),
    ("directed_by_inv", [
        "tell me about the pictures {e} helmed",
        "Show me the filmography of director {e}.",
        "I'm a fan of {e} as a director, which films should I check out",
        "Enumerate the films with {e} in the director's chair.",
        "what flicks has {e} made as director",
        "name the films {e} was behind the camera for",
        "which titles list {e} as director",
    ]),
    ("written_by_inv", [
        "what has the screenwriter {e} written",
        "which titles credit {e} as a writer",
        "Show me screenplays penned by {e}.",
        "{e} wrote the scripts for which pictures?",
        "what did {e} write for the screen",
        "as a writer, what is {e} known for",
        "any flicks {e} put pen to paper for?",
    ]),
    ("starred_actors_inv", [
        "what's {e} been in?",
        "Give me {e}'s filmography as an actor.",
        "which pictures list {e} among the cast",
        "I loved {e}, which movies can I watch them in",
        "List the films in which {e} played a part.",
        "{e} landed roles in which films?",
        "Which productions has {e} performed in?",
    ]),
    ("has_tags", [
        "what tags does {e} have",
        "List the keywords associated with {e}.",
        "what is {e} about, in tags",
        "give me some labels people attach to {e}",
        "Which subjects or themes are linked to {e}?",
        "how is {e} tagged",
        "what themes come up in {e}",
    ]),
    ("has_tags_inv", [
        "I'm in the mood for something about {e} - any films?",
        "Show me movies with the keyword {e}.",
        "which pictures deal with {e}",
        "List titles labelled with {e}.",
        "recommend flicks on the theme of {e}",
        "what films have {e} as a tag",
        "any movies that revolve around {e}?",
    ]),
    # 2-hop
    ("directed_by -> directed_by_inv", [
        "which pictures share a director with {e}",
        "I enjoyed {e}; what else has its director made?",
        "List other films from the person who helmed {e}.",
        "{e}'s filmmaker also did which movies?",
        "more movies by the same director as {e}, please",
        "What other work is there from {e}'s director?",
        "whoever directed {e} - what other titles did they direct",
    ]),
    ("directed_by_inv -> directed_by", [
        "who has {e} shared the director's chair with",
        "Name the filmmakers who directed a movie jointly with {e}.",
        "{e} has co-helmed pictures with whom?",
        "list directing partners of {e}",
        "who else is credited as director on the movies {e} directed",
        "Which directors have teamed up with {e} behind the camera?",
        "on films {e} directed, who were the other directors",
    ]),
    ("directed_by_inv -> has_genre", [
        "what genres has {e} helmed",
        "Which genres appear in the filmography of director {e}?",
        "as a filmmaker, what types of pictures does {e} make",
        "{e} directs mostly what genre of movie",
        "List the genres of the movies {e} was behind the camera for.",
        "{e} likes directing which sorts of films",
        "what categories do {e}'s directorial efforts fall into",
    ]),
    ("directed_by_inv -> in_language", [
        "as a director, has {e} worked in more than one language? which",
        "Which languages are used in {e}'s directorial work?",
        "does {e} direct in English or other languages? which ones",
        "List the languages of films helmed by {e}.",
        "what languages do the actors speak in {e}'s directorial efforts",
        "I want to know the languages of every picture {e} has directed",
        "what tongues do {e}'s movies as director use",
    ]),
    ("directed_by_inv -> release_year", [
        "in what years did {e} release films as director",
        "When was {e} active as a director? give me the release years",
        "List the years in which movies helmed by {e} came out.",
        "what years did {e}'s directorial efforts hit cinemas",
        "{e} directed movies in which years?",
        "Which years saw a new film directed by {e}?",
        "timeline check: what years did {e} put out films as a director",
    ]),
    ("directed_by_inv -> starred_actors", [
        "which actors have worked under director {e}",
        "Name performers who appeared in pictures helmed by {e}.",
        "List the cast members across all movies directed by {e}.",
        "which stars has {e} directed",
        "I'm curious which actors {e} has worked with from behind the camera",
        "who shows up in the cast of {e}'s directorial work",
        "any famous actors in movies {e} directed?",
    ]),
    ("directed_by_inv -> written_by", [
        "who wrote the scripts for director {e}'s films",
        "which screenwriters has director {e} collaborated with",
        "Name the writers whose scripts {e} brought to the screen.",
        "I'm looking for the screenwriters behind the films {e} helmed",
        "List the screenwriters on pictures directed by {e}.",
        "{e} directed films written by whom?",
        "whose screenplays has {e} directed",
    ]),
    ("starred_actors -> starred_actors_inv", [
        "Find movies featuring any of the performers from {e}.",
        "what flicks have someone from the {e} cast in them",
        "the people who acted in {e} - what other movies did they do",
        "List films that have at least one actor in common with {e}.",
        "which titles overlap in cast with {e}",
        "anything else starring the actors of {e}?",
        "Other films where members of {e}'s cast show up?",
    ]),
    ("starred_actors_inv -> directed_by", [
        "which filmmakers has {e} acted for",
        "Name the directors who have cast {e}.",
        "{e} has been directed by whom?",
        "List every director {e} has worked under.",
        "under which directors has {e} performed",
        "who were the directors on the pictures featuring {e}",
        "I'm researching {e}'s career: which directors cast them?",
    ]),
    ("starred_actors_inv -> has_genre", [
        "what genres does {e} usually appear in",
        "Which genres does {e}'s acting filmography cover?",
        "is {e} more of a comedy or drama actor? what genres are their films",
        "List the genres of films featuring {e}.",
        "what sorts of flicks is {e} in",
        "{e} acts in what genres?",
        "what categories do the movies with {e} in the cast belong to",
    ]),
    ("starred_actors_inv -> in_language", [
        "what languages has {e} performed in on film",
        "Which languages do the films in {e}'s filmography use?",
        "has {e} done films in languages other than English? which",
        "List the languages of pictures that feature {e}.",
        "in which tongues can I hear {e} on screen",
        "{e} starred in films in what languages?",
        "what languages are spoken in the movies {e} was cast in",
    ]),
    ("starred_actors_inv -> release_year", [
        "which years did {e} have a film out",
        "Give me the release years of {e}'s movies.",
        "in what years did movies featuring {e} premiere",
        "when was {e} active on screen - list the years of their films",
        "{e} was in films released in which years?",
        "List the years when pictures with {e} in the cast came out.",
        "what years do {e}'s flicks date from",
    ]),
    ("starred_actors_inv -> starred_actors", [
        "which actors has {e} shared a film with",
        "Name performers who have appeared on screen with {e}.",
        "list the people {e} has acted opposite",
        "Who else was in the cast of {e}'s movies?",
        "which castmates has {e} had over the years",
        "find everyone who's been cast in the same film as {e}",
        "give me {e}'s fellow cast members across their films",
    ]),
    ("starred_actors_inv -> written_by", [
        "whose scripts has {e} acted in",
        "Which screenwriters wrote films that {e} appeared in?",
        "who were the scribes on {e}'s movies",
        "List the writers behind {e}'s films.",
        "{e} has performed lines written by which screenwriters?",
        "I'd like to know the screenwriters of movies with {e} in them",
        "which writers has {e} worked with as an actor",
    ]),
    ("written_by -> written_by_inv", [
        "what else did the person who wrote {e} write",
        "I loved the script of {e}; what other films did that writer do?",
        "List other movies penned by {e}'s screenwriter.",
        "more films from the writer of {e}, please",
        "Which titles were also scripted by whoever wrote {e}?",
        "{e}'s writer has other credits - which movies?",
        "find flicks written by the same person as {e}",
    ]),
    ("written_by_inv -> directed_by", [
        "{e}'s screenplays were helmed by which filmmakers?",
        "Name the directors who brought {e}'s screenplays to the screen.",
        "{e} wrote films that were directed by whom?",
        "List the directors of pictures penned by {e}.",
        "which directors has the writer {e} collaborated with",
        "when {e} writes a film, who usually directs it",
        "who was behind the camera on {e}'s scripts",
    ]),
    ("written_by_inv -> has_genre", [
        "what kind of stories does {e} write - which genres",
        "Which genres has the screenwriter {e} worked in?",
        "list the genres of {e}'s screenplays",
        "{e} writes movies of what genre?",
        "what categories do the films penned by {e} fall into",
        "as a writer, which genres does {e} favor",
        "Tell me the genres of pictures scripted by {e}.",
    ]),
    ("written_by_inv -> in_language", [
        "what tongue are the films from {e}'s typewriter in",
        "List the languages of the movies {e} wrote.",
        "has {e} written films in languages besides English? which",
        "what languages do the characters speak in films scripted by {e}",
        "{e}'s screenwriting credits are in what languages?",
        "Identify the spoken languages of films with a writing credit for {e}.",
        "in what languages can you watch stuff {e} wrote",
    ]),
    ("written_by_inv -> release_year", [
        "in which years did {e} have a script reach the screen",
        "List the release years of pictures scripted by {e}.",
        "when were {e}'s screenplays turned into released films - which years",
        "{e} wrote films released in what years?",
        "give me the years of {e}'s writing credits",
        "Which years saw movies with a screenplay by {e}?",
        "what years are the flicks {e} wrote from",
    ]),
    ("written_by_inv -> starred_actors", [
        "which actors have performed in {e}'s screenplays",
        "Name the cast members of films penned by {e}.",
        "who got cast in the movies {e} scripted",
        "List performers who appeared in pictures written by {e}.",
        "{e} wrote movies featuring which actors?",
        "whose performances brought {e}'s scripts to life",
        "I want the actors from every film with {e} as screenwriter",
    ]),
    ("written_by_inv -> written_by", [
        "who has {e} shared writing credits with",
        "Name the screenwriters who co-authored scripts with {e}.",
        "which writers has {e} teamed up with",
        "{e}'s writing partners - who are they?",
        "List the other writers credited on {e}'s films.",
        "who else worked on the screenplays {e} wrote",
        "with whom has {e} written a movie",
    ]),
    # 3-hop
    ("directed_by -> directed_by_inv -> has_genre", [
        "the filmmaker behind {e} - what genres do their other pictures belong to",
        "Which genres show up across the other work of {e}'s director?",
        "what genres has the person who helmed {e} worked in elsewhere",
        "List the genres of the remaining films from {e}'s director.",
        "{e}'s director also made movies in which genres?",
        "besides {e}, what kinds of flicks has its director done",
        "I want the genres of pictures sharing a director with {e}.",
    ]),
    ("directed_by -> directed_by_inv -> in_language", [
        "whoever directed {e} - which languages are their other movies in",
        "List the languages of films that share a filmmaker with {e}.",
        "besides {e}, what languages has its director worked in",
        "{e}'s filmmaker has directed other titles in what languages?",
        "Identify the spoken languages of other movies from the person who directed {e}.",
        "does the director of {e} also shoot in other languages? which ones",
        "what tongues are used in flicks by the same director as {e}",
    ]),
    ("directed_by -> directed_by_inv -> release_year", [
        "when did the director of {e} release other films - which years",
        "Give me the release years of the other titles helmed by the director of {e}.",
        "besides {e}, what years did its director have films come out",
        "{e}'s director has other movies from which years?",
        "what years are the other flicks by whoever directed {e} from",
        "Which years saw releases from the same filmmaker as {e}?",
        "timeline of {e}'s director: in what years did their other movies premiere",
    ]),
    ("directed_by -> directed_by_inv -> starred_actors", [
        "who has {e}'s director cast in their other movies",
        "besides {e}, which stars has its director worked with",
        "List the cast of every other film made by the person who directed {e}.",
        "the person who directed {e}: who appears in their other flicks",
        "{e}'s director also made movies starring whom?",
        "Which actors appear in titles sharing a director with {e}?",
        "I liked the direction of {e}; who acts in that director's other films?",
    ]),
    ("directed_by -> directed_by_inv -> written_by", [
        "name the screenwriting credits on other work by {e}'s filmmaker",
        "Which screenwriters wrote the other films of {e}'s director?",
        "List the writers of movies that share a filmmaker with {e}.",
        "the director of {e} made other films - who wrote those",
        "{e}'s director has directed scripts by which writers?",
        "who scripted the remaining movies by whoever directed {e}",
        "Identify the screenwriters on other titles from the director of {e}.",
    ]),
    ("starred_actors -> starred_actors_inv -> directed_by", [
        "which filmmakers have worked with the cast of {e} on other movies",
        "Name the directors of other pictures featuring actors from {e}.",
        "the actors in {e} - who directed the other films they were in",
        "who helmed movies that have a cast member in common with {e}",
        "{e}'s cast also worked under which directors?",
        "List directors of films whose cast overlaps with {e}.",
        "which directors have cast someone from {e} in another film",
    ]),
    ("starred_actors -> starred_actors_inv -> has_genre", [
        "what genres do the other films of {e}'s actors belong to",
        "What genres do the performers of {e} tend to work in outside it?",
        "List the genres of pictures that share a cast member with {e}.",
        "what kinds of flicks have the stars of {e} done elsewhere",
        "besides {e}, what genres has its cast worked in",
        "Which genres cover the other movies featuring actors from {e}?",
        "if I follow the actors of {e} to their other films, what genres do I get",
    ]),
    ("starred_actors -> starred_actors_inv -> in_language", [
        "in which tongues have the actors of {e} made other movies",
        "List the languages of films whose cast overlaps with {e}.",
        "Do {e}'s actors appear in non-English movies too? which languages",
        "besides {e}, which languages have its cast members acted in",
        "{e}'s actors also appear in films in what languages?",
        "Identify the languages of other titles featuring someone from the cast of {e}.",
        "the stars of {e} - what languages are their other flicks in",
    ]),
    ("starred_actors -> starred_actors_inv -> release_year", [
        "when did the other films with {e}'s cast come out",
        "List the release years of pictures sharing a performer with {e}.",
        "what years did the actors from {e} have other movies released",
        "{e}'s stars appeared in other films released in which years?",
        "Which years saw releases featuring someone from the cast of {e}?",
        "besides {e}, in what years did its cast have flicks out",
        "give me the years of other movies starring people from {e}",
    ]),
    ("starred_actors -> starred_actors_inv -> written_by", [
        "which screenwriters wrote for the actors of {e} in other movies",
        "List the writers of pictures whose cast overlaps with {e}.",
        "the performers in {e} - whose scripts have they acted in elsewhere",
        "{e}'s stars have been in films written by whom?",
        "Identify the screenwriters of other titles that feature actors from {e}.",
        "besides {e}, which writers' scripts has its cast appeared in",
        "who scripted the flicks that share a performer with {e}",
    ]),
    ("written_by -> written_by_inv -> directed_by", [
        "the person who wrote {e} - who directed their other screenplays",
        "List the directors of films that share a writer with {e}.",
        "{e}'s screenwriter has written films helmed by whom?",
        "besides {e}, which directors have worked from scripts by its writer",
        "Name the filmmakers behind the remaining movies penned by whoever wrote {e}.",
        "who was behind the camera on other pictures scripted by {e}'s writer",
        "Other films came from {e}'s writer; name their directors.",
    ]),
    ("written_by -> written_by_inv -> has_genre", [
        "the writer of {e} - what genres are their other scripts",
        "List the genres of pictures that share a screenwriter with {e}.",
        "besides {e}, which genres has its screenwriter written in",
        "{e}'s writer has penned films in what genres?",
        "Which genres do the remaining scripts by {e}'s author belong to?",
        "what categories do other movies from the same writer as {e} fall into",
        "I enjoyed the writing in {e}; what genres does that writer's other work cover?",
    ]),
    ("written_by -> written_by_inv -> in_language", [
        "the screenwriter of {e} wrote other films - which languages are they in",
        "List the languages of movies sharing a writer with {e}.",
        "besides {e}, in which tongues have scripts by its writer been filmed",
        "{e}'s writer also penned pictures in what languages?",
        "Identify the languages of other titles scripted by whoever wrote {e}.",
        "what languages are spoken in the remaining flicks by the writer of {e}",
        "does the person who wrote {e} write for films in other languages? which ones",
    ]),
    ("written_by -> written_by_inv -> release_year", [
        "List the release years of pictures that share a screenwriter with {e}.",
        "besides {e}, what years did its writer have scripts reach theaters",
        "{e}'s screenwriter had other movies released in which years?",
        "in which years did flicks penned by whoever wrote {e} premiere",
        "Give me the years when the author of {e}'s screenplay saw other films released.",
        "what years are the other movies scripted by {e}'s writer from",
        "timeline for the writer of {e}: when did their other pictures come out",
    ]),
    ("written_by -> written_by_inv -> starred_actors", [
        "which performers were cast when {e}'s writer had other scripts filmed",
        "List the performers in pictures that share a screenwriter with {e}.",
        "besides {e}, which actors have appeared in films its writer penned",
        "{e}'s writer also wrote movies starring whom?",
        "Name the actors from the remaining titles scripted by whoever wrote {e}.",
        "the person who wrote {e}: who's in their other flicks",
        "Which stars show up in other movies by the screenwriter of {e}?",
    ]),
]


def plan(rng, phrases):
    """Per hop, (path, phrasing) pairs taken round-robin over path types (path
    order and phrasing order shuffled), so each path type is used evenly."""
    by_hop = collections.defaultdict(list)
    for path_text, phrasings in phrases:
        path = [p.strip() for p in path_text.split("->")]
        ph = list(phrasings)
        rng.shuffle(ph)
        by_hop[len(path)].append((path, ph))
    out = {}
    for hop, groups in by_hop.items():
        rng.shuffle(groups)
        pairs = []
        for k in range(max(len(ph) for _, ph in groups)):
            pairs += [(path, ph[k]) for path, ph in groups if k < len(ph)]
        out[hop] = pairs
    return out


def avoided_topics(path):
    if not path:
        return set()
    topics = set()
    for line in open(path, encoding="utf-8"):
        if line.startswith("#"):
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) >= 3:
            topics.add(parts[2])
    return topics


def sample(graph, rng, phrases, used, max_answers, me):
    """PER_HOP questions per hop: phrasings round-robin over `phrases`' path
    types ([`plan`]), each with a topic not in `used` (which grows) that has
    1..max_answers answers. Rows of (hop, phrasing, topic, path, answers)."""
    by_hop = plan(rng, phrases)
    rows = []
    for hop in (1, 2, 3):
        pairs = by_hop[hop]
        for i in range(PER_HOP):
            path, ph = pairs[i % len(pairs)]
            starts = sorted(graph[path[0]].keys())
            for _ in range(1000):
                topic = rng.choice(starts)
                if topic in used or "[" in topic or "]" in topic or "|" in topic:
                    continue
                answers = traverse(graph, topic, path)
                if 0 < len(answers) <= max_answers:
                    break
            else:
                sys.exit(f"{me}: no topic with 1..{max_answers} answers for {path}")
            used.add(topic)
            rows.append((hop, ph, topic, path, sorted(answers)))
    return rows


def write(out, rows, me):
    """OUT/bracketed.txt, OUT/plain.txt and OUT/paths.tsv from `rows`."""
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
    print(f"{me}: wrote {len(rows)} questions to {out} "
          f"(1-hop {counts[1]}, 2-hop {counts[2]}, 3-hop {counts[3]})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", required=True, help="MetaQA kb.tsv (head<TAB>relation<TAB>tail lines)")
    ap.add_argument("--out", required=True, help="folder for bracketed.txt, plain.txt, paths.tsv")
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--max-answers", type=int, default=30)
    ap.add_argument("--avoid", default="", help="a paths.tsv whose topics are not reused (e.g. freeform/paths.tsv)")
    args = ap.parse_args()
    graph = load(args.kb)
    if not graph:
        sys.exit(f"freeform_b.py: no head<TAB>relation<TAB>tail lines in {args.kb}")
    rng = random.Random(args.seed)
    rows = sample(graph, rng, PHRASES_B, avoided_topics(args.avoid), args.max_answers, "freeform_b.py")
    write(Path(args.out), rows, "freeform_b.py")

if __name__ == "__main__":
    main()
