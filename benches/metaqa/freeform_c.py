#!/usr/bin/env python3
"""Free-form MetaQA questions, set C: a third, fresh hand-written phrase table
for testing a question planner on wording it was never tuned on.

    python3 benches/metaqa/freeform_c.py --kb $DATA/metaqa/kb.tsv \\
        --out benches/metaqa/freeform-c \\
        --avoid benches/metaqa/freeform/paths.tsv \\
        --avoid benches/metaqa/freeform-b/paths.tsv

PHRASES_C covers the same path types as freeform_b.py's PHRASES_B (every 1-hop
relation and inverse there, every 2-hop and 3-hop chain there), 6 phrasings
each, written the way different people ask: casual and formal, questions and
imperatives, possessives ("{e}'s director"), relative clauses and the passive
voice, with vocabulary such as auteur, feature, picture, cast member, co-star,
scriptwriter, penned, spoken language, came out, style, keywords. No phrasing
repeats, or is a mere word swap of, one in PHRASES, PHRASES_B or MetaQA's own
templates.

Outputs have the same formats as set B's: OUT/bracketed.txt (topic in
[brackets]), OUT/plain.txt (no brackets), both `question<TAB>answer|answer`,
and OUT/paths.tsv (hop, bracketed question, topic, gold chain); 50 questions
per hop. KB loading comes from freeform.py; the sampling (round-robin over
path types, answers excluding the topic), the writing and the reading of
--avoid files from freeform_b.py. --avoid may be given more than once or
as a comma list (pass sets A's and B's paths.tsv, as above, to keep the three
sets' topics disjoint). Deterministic for a given KB, --seed and --avoid files.
"""

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from freeform import load  # noqa: E402
from freeform_b import avoided_topics, sample, write  # noqa: E402

# (path, phrasings); {e} is the topic entity.
PHRASES_C = [
    # 1-hop
    ("directed_by", [
        "{e} is the work of which auteur?",
        "By whom was {e} directed?",
        "Under whose direction was {e} made?",
        "who called the shots on the set of {e}",
        "Could you tell me which director made the picture {e}?",
        "need {e}'s director, who is it",
    ]),
    ("written_by", [
        "By whom was the script of {e} written?",
        "{e}'s scriptwriter - who was that?",
        "Which scriptwriter penned the feature {e}?",
        "tell me whose script became {e}",
        "Who holds the writing credit for {e}?",
        "the story and screenplay of {e} came from which writer",
    ]),
    ("starred_actors", [
        "who makes up the cast of {e}",
        "Which actors were featured in the picture {e}?",
        "By whom were the roles in {e} played?",
        "{e} - who's acting in it?",
        "Tell me the names of the performers seen in {e}.",
        "Who took on the acting roles in {e}?",
    ]),
    ("has_genre", [
        "Under which genre would a video store shelve {e}?",
        "{e}'s genre, please",
        "In genre terms, how would {e} be categorized?",
        "Tell me what genre the picture {e} is considered.",
        "which genre best fits {e}",
        "my friend recommended {e} - what style of film is that, genre-wise",
    ]),
    ("release_year", [
        "{e} came out when? I need the year",
        "{e}'s year of release?",
        "Tell me the year the picture {e} was put out.",
        "In what year was {e} made available to the public?",
        "which year does {e} date back to",
        "give me the exact year {e} reached audiences",
    ]),
    ("in_language", [
        "{e}'s spoken language?",
        "Name the language the feature {e} is spoken in.",
        "what language would I need to understand to watch {e} without subtitles",
        "What is the language of the original audio track of {e}?",
        "in which language are the lines in {e} delivered",
        "Which language does {e} use?",
    ]),
    ("directed_by_inv", [
        "Which pictures were directed by {e}?",
        "List every feature that the auteur {e} has directed.",
        "{e} is a filmmaker, right? what did they make",
        "give me {e}'s directing credits",
        "What movies came out under {e}'s direction?",
        "I'd like to see something directed by {e} - what are my options?",
    ]),
    ("written_by_inv", [
        "What scripts has {e} penned that were made into movies?",
        "List the features written by {e}.",
        "{e}'s screenwriting credits, please",
        "what did {e} work on as a scriptwriter",
        "Name films for which {e} received a writing credit.",
        "which pictures started life as a screenplay by {e}",
    ]),
    ("starred_actors_inv", [
        "Which features has {e} had a part in?",
        "What's on {e}'s resume as an actor?",
        "Name the pictures {e} was cast in.",
        "In which movies can {e} be seen acting?",
        "I want to watch something with {e} in it - what's out there",
        "Which films count {e} as a cast member?",
    ]),
    ("has_tags", [
        "{e} has been tagged with which keywords?",
        "Which tags apply to the picture {e}?",
        "Which themes has {e} been labelled with?",
        "What tags would I find on {e}'s page in a movie database?",
        "Tell me the keywords people use for the feature {e}.",
        "any tags on {e}?",
    ]),
    ("has_tags_inv", [
        "Which pictures have been labelled with the keyword {e}?",
        "I'm after films whose keywords include {e}.",
        "what features fall under the tag {e}",
        "{e} is a tag on which movies?",
        "Name titles where {e} appears among the keywords.",
        "Which films would a search for the keyword {e} turn up?",
    ]),
    # 2-hop
    ("directed_by -> directed_by_inv", [
        "If I liked {e}, which other films by its auteur should I see?",
        "The director of {e} - what else is in their filmography?",
        "Which features were made by the same filmmaker who directed {e}?",
        "Apart from {e}, what has its director directed?",
        "{e} was directed by someone who also made which other pictures?",
        "Show me other movies by the director of {e}.",
    ]),
    ("directed_by_inv -> directed_by", [
        "Which auteurs has {e} split a directing credit with?",
        "who did {e} direct movies in tandem with",
        "With which other filmmakers has {e} jointly directed a feature?",
        "What other directors are listed on the pictures that {e} directed?",
        "Tell me the filmmakers who have served as {e}'s co-director.",
        "Whose name sits next to {e}'s in the director credits?",
    ]),
    ("directed_by_inv -> has_genre", [
        "As an auteur, {e} has made films of which genres?",
        "Pictures directed by {e} belong to which genres?",
        "{e}'s directing career spans which genres?",
        "Tell me the genres {e} has covered as a director.",
        "If I watch a film directed by {e}, what genre should I expect?",
        "which genres does {e} gravitate toward when directing",
    ]),
    ("directed_by_inv -> in_language", [
        "{e}'s films as a director - what languages are they in?",
        "Tell me every language {e} has directed a film in.",
        "What language would I hear in a movie directed by {e}?",
        "The auteur {e} directs in which languages?",
        "Name the spoken languages across {e}'s work as a director.",
        "When {e} directs a picture, what language is spoken in it?",
    ]),
    ("directed_by_inv -> release_year", [
        "When did the features of the auteur {e} come out? give the years",
        "Give me the release years for everything {e} has directed.",
        "{e} directed pictures that were released in what years?",
        "Which years are {e}'s directorial features from?",
        "tell me the years {e}'s directing work reached audiences",
        "What are the years of release of films made by director {e}?",
    ]),
    ("directed_by_inv -> starred_actors", [
        "Who has acted for the auteur {e}?",
        "Name cast members from the pictures that {e} directed.",
        "In the features {e} has directed, who played the roles?",
        "the movies {e} directed had which actors in them",
        "If I watch films by director {e}, which actors will I see?",
        "Who starred in pictures made under {e}'s direction?",
    ]),
    ("directed_by_inv -> written_by", [
        "Which scriptwriters penned the films {e} directed?",
        "Who wrote the scripts that the auteur {e} went on to direct?",
        "Name the writers credited on features directed by {e}.",
        "as a director, whose scripts has {e} worked from",
        "Tell me who wrote the movies {e} was the director of.",
        "The screenplays of {e}'s directorial work were written by whom?",
    ]),
    ("starred_actors -> starred_actors_inv", [
        "Where else have {e}'s cast members turned up? name the films",
        "Name films featuring someone who also acted in {e}.",
        "Find me pictures that any of {e}'s actors appeared in.",
        "What movies are connected to {e} through a shared actor?",
        "The performers in {e} acted in which other pictures?",
        "Which features have actors in them who were also in {e}?",
    ]),
    ("starred_actors_inv -> directed_by", [
        "Which directors has the actor {e} taken direction from?",
        "By whom were {e}'s features directed?",
        "Tell me the directors behind the films in which {e} had a role.",
        "As an actor, which filmmakers has {e} collaborated with?",
        "who was calling the shots on the sets of {e}'s movies",
        "Name the directors of every picture with {e} in the cast.",
    ]),
    ("starred_actors_inv -> has_genre", [
        "Which genres do {e}'s acting roles fall into?",
        "Tell me the genres of the features {e} has acted in.",
        "{e} usually gets cast in what style of film? name the genres",
        "As a cast member, which genres has {e} worked in?",
        "genre-wise, what are the movies with {e} like",
        "Pictures starring {e} are of which genres?",
    ]),
    ("starred_actors_inv -> in_language", [
        "{e}'s films as an actor are in which languages?",
        "Tell me the languages of the features that cast {e}.",
        "What language do people speak in movies starring {e}?",
        "Which languages would I need to follow every film {e} acted in?",
        "The pictures with {e} in the cast were made in what languages?",
        "In which spoken languages has the actor {e} appeared?",
    ]),
    ("starred_actors_inv -> release_year", [
        "Which years do {e}'s acting credits span?",
        "Give me the release years of the features {e} was cast in.",
        "{e} has acted in films that came out in which years?",
        "Tell me each year that saw a new picture with {e} in it.",
        "which years did movies with {e} as a cast member hit the screen",
        "In what years were pictures starring the actor {e} put out?",
    ]),
    ("starred_actors_inv -> starred_actors", [
        "Who has {e} shared billing with as a co-star?",
        "Whom has {e} acted next to on screen?",
        "If I watch {e}'s movies, which other actors will I see in them?",
        "Who has been on a cast list with {e}?",
        "Which people were part of the same cast as {e} at some point?",
        "Name the performers that {e} has played scenes with.",
    ]),
    ("starred_actors_inv -> written_by", [
        "Which scriptwriters penned the pictures {e} appeared in?",
        "Who wrote the features in which {e} had a role?",
        "By whom were the screenplays of {e}'s films written?",
        "Tell me the screenwriters credited on pictures with {e} in the cast.",
        "which writers wrote the roles that {e} ended up playing",
        "{e} acted in movies scripted by which writers?",
    ]),
    ("written_by -> written_by_inv", [
        "What else has the scriptwriter of {e} penned?",
        "Apart from {e}, what did its writer write?",
        "{e} was written by someone who also wrote which other pictures?",
        "Show me other movies from the pen of {e}'s writer.",
        "Which other scripts by the author of {e} were turned into films?",
        "the screenwriter behind {e} has what other features to their name",
    ]),
    ("written_by_inv -> directed_by", [
        "Which filmmakers turned {e}'s scripts into movies?",
        "By whom were the features written by {e} directed?",
        "Tell me the auteurs who have directed a screenplay by {e}.",
        "the directors behind {e}'s scripts - who are they",
        "Name the directors of the movies {e} has a writing credit on.",
        "Who ended up directing the stories {e} wrote?",
    ]),
    ("written_by_inv -> has_genre", [
        "In which genres has the scriptwriter {e} penned films?",
        "The pictures written by {e} are of what kinds? give the genres",
        "Tell me the genres of the movies {e} has writing credits on.",
        "{e}'s scripts tend to be in which genres?",
        "Name the genres covered by features that {e} wrote.",
        "Screenplays by {e} become films of which genres?",
    ]),
    ("written_by_inv -> in_language", [
        "Tell me the spoken languages of features penned by {e}.",
        "{e} has written movies in which languages?",
        "What language would I hear in a movie {e} wrote?",
        "Name every language used in a film written by {e}.",
        "across {e}'s writing credits, which languages come up",
        "The scriptwriter {e} writes pictures in what languages?",
    ]),
    ("written_by_inv -> release_year", [
        "When were {e}'s screenplays filmed and released? give the years",
        "Tell me when the films {e} wrote were released, by year.",
        "What are the years of the features {e} wrote?",
        "Which years did the scriptwriter {e} have movies released in?",
        "The pictures penned by {e} came out in which years?",
        "when, year-wise, did {e}'s scripts make it to the screen",
    ]),
    ("written_by_inv -> starred_actors", [
        "Which cast members appear in the features penned by {e}?",
        "Who played the characters that {e} wrote?",
        "{e}'s scripts were acted out by whom?",
        "Which actors starred in the movies with a writing credit for {e}?",
        "Tell me who was in the cast when scriptwriter {e}'s screenplays were filmed.",
        "Name everyone who acted in a picture penned by {e}.",
    ]),
    ("written_by_inv -> written_by", [
        "With which other scriptwriters has {e} shared a byline?",
        "Who helped {e} write their films?",
        "Tell me the writers {e} has partnered with on scripts.",
        "Which people are credited as writers alongside {e}?",
        "name {e}'s writing collaborators",
        "Who are the other writers on the pictures penned by {e}?",
    ]),
    # 3-hop
    ("directed_by -> directed_by_inv -> has_genre", [
        "What genres does the auteur of {e} work in on their other films?",
        "The filmmaker who made {e} has directed other pictures; what genres are they?",
        "Which genres do the other features from {e}'s director fall into?",
        "Tell me the genres of other movies by the person who called the shots on {e}.",
        "By genre, how would you classify the rest of the filmography of {e}'s director?",
        "other films from {e}'s filmmaker: which genres?",
    ]),
    ("directed_by -> directed_by_inv -> in_language", [
        "In which languages has the auteur of {e} made other films?",
        "The director of {e} also made other pictures - what languages are spoken in them?",
        "What language would I hear in other movies by the director of {e}?",
        "{e}'s director has other features; name the languages they're in.",
        "Tell me the spoken languages of the other films from the filmmaker who made {e}.",
        "which languages turn up in the rest of the filmography of {e}'s director",
    ]),
    ("directed_by -> directed_by_inv -> release_year", [
        "In which years did the auteur of {e} release other pictures?",
        "Over which years did {e}'s director release their other pictures?",
        "Tell me the release years of the other features by {e}'s filmmaker.",
        "What are the release years of the other pictures directed by the person who directed {e}?",
        "By year, when were the other films of {e}'s director released?",
        "give me the years when the rest of the filmography of {e}'s director came out",
    ]),
    ("directed_by -> directed_by_inv -> starred_actors", [
        "Which actors appear in the other pictures by the auteur of {e}?",
        "Casting-wise, who has the director of {e} used in other films?",
        "Tell me the cast members of other features from {e}'s filmmaker.",
        "Who acted for the director of {e} on their other movies?",
        "Who starred in the rest of the filmography of the person who directed {e}?",
        "{e}'s director has worked with which actors on other projects?",
    ]),
    ("directed_by -> directed_by_inv -> written_by", [
        "Who wrote the scripts for the other pictures by the auteur of {e}?",
        "For the director of {e}'s other features, who wrote the screenplays?",
        "Tell me the scriptwriters of other features from {e}'s filmmaker.",
        "Whose screenplays has the director of {e} filmed on other projects?",
        "Name the writers of the rest of the films directed by {e}'s director.",
        "By whom were the other movies of {e}'s director written?",
    ]),
    ("starred_actors -> starred_actors_inv -> directed_by", [
        "Which auteurs have directed members of {e}'s cast in other pictures?",
        "Tell me the filmmakers behind other features starring someone from {e}.",
        "By whom were the other movies of {e}'s cast members directed?",
        "Name the directors of films in which a cast member of {e} also acted.",
        "Who called the shots on the other movies that {e}'s performers appeared in?",
        "What directors did the performers of {e} work under on other films?",
    ]),
    ("starred_actors -> starred_actors_inv -> has_genre", [
        "What kinds of genres do the actors from {e} work in on other pictures?",
        "Tell me the genres of features where someone from {e}'s cast also appears.",
        "By genre, what are the other movies starring {e}'s actors like?",
        "Among the other films {e}'s actors appeared in, which genres occur?",
        "Name the genres of films linked to {e} by a shared cast member.",
        "What style of film, genre-wise, do the performers of {e} make elsewhere?",
    ]),
    ("starred_actors -> starred_actors_inv -> in_language", [
        "Which languages are the other pictures of {e}'s cast members in?",
        "Tell me the spoken languages of features in which someone from {e}'s cast also acted.",
        "What language do people speak in the other films of the actors from {e}?",
        "{e}'s cast has acted in other pictures in which languages?",
        "If you follow the cast of {e} into other movies, what languages do you hear?",
        "In other pictures featuring performers from {e}, which languages are spoken?",
    ]),
    ("starred_actors -> starred_actors_inv -> release_year", [
        "When did the other pictures with {e}'s cast members come out? list the years",
        "Tell me the release years of features in which an actor from {e} also appeared.",
        "What years do the other movies of the {e} cast come from?",
        "By year, when did the actors of {e} appear in other features?",
        "Give me the years of release of other films with a cast member from {e}.",
        "The people who acted in {e} were in other pictures from which years?",
    ]),
    ("starred_actors -> starred_actors_inv -> written_by", [
        "Who penned the other pictures that {e}'s cast members appeared in?",
        "Tell me the scriptwriters of features where an actor from {e} also had a role.",
        "By whom were the other movies of the performers of {e} written?",
        "Name the screenwriters of other films starring anyone from the cast of {e}.",
        "Who wrote the screenplays of movies that {e} shares an actor with?",
        "Whose screenplays have the co-stars of {e} performed in elsewhere?",
    ]),
    ("written_by -> written_by_inv -> directed_by", [
        "Name each director who has filmed another script by the scriptwriter of {e}.",
        "Tell me the auteurs who directed other scripts by {e}'s writer.",
        "By whom were the other features written by {e}'s screenwriter directed?",
        "Other movies from the pen of {e}'s writer were directed by whom?",
        "Name the directors of films that the author of {e} also wrote.",
        "Who sat in the director's chair for the other scripts by {e}'s author?",
    ]),
    ("written_by -> written_by_inv -> has_genre", [
        "In which genres has the scriptwriter of {e} penned other films?",
        "Tell me the genres of the rest of the movies written by {e}'s author.",
        "The person who wrote {e} wrote other pictures too - which genres?",
        "By genre, what are the other features from the writer of {e} like?",
        "Name the genres of films linked to {e} by a shared writer.",
        "{e}'s writer has other screenplays to their name; what kinds of genres are they?",
    ]),
    ("written_by -> written_by_inv -> in_language", [
        "Which languages are spoken in other films penned by the scriptwriter of {e}?",
        "Tell me the languages of the remainder of the work by {e}'s author.",
        "The person who wrote {e} wrote other features too - what languages are they in?",
        "If I watch other films by {e}'s writer, what language will the dialogue be in?",
        "Name the languages of films connected to {e} by a common writer.",
        "{e}'s writer has had other scripts filmed in which languages?",
    ]),
    ("written_by -> written_by_inv -> release_year", [
        "In which years did the scriptwriter of {e} have other pictures come out?",
        "Tell me the release years of the rest of the films penned by {e}'s author.",
        "The person who wrote {e} wrote other features - when were they released, by year?",
        "Which years saw other films from the writer of {e} reach audiences?",
        "Give me the years of release of films linked to {e} by a shared screenwriter.",
        "{e}'s writer had other scripts made into films in which years?",
    ]),
    ("written_by -> written_by_inv -> starred_actors", [
        "Which cast members appear in other pictures penned by the scriptwriter of {e}?",
        "Tell me who starred in the rest of the movies written by {e}'s author.",
        "The person who wrote {e} wrote other features - who was cast in them?",
        "By whom were the characters in the other scripts of {e}'s writer played?",
        "Name the actors in films connected to {e} by a common writer.",
        "{e}'s writer wrote other movies; which actors were in those?",
    ]),
]


def run(phrases, prog, doc):
    """The command line of a phrase-table set: sample `phrases` over --kb
    and write --out (`prog` names the script in messages, `doc` is its
    docstring)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--kb", required=True, help="MetaQA kb.tsv (head<TAB>relation<TAB>tail lines)")
    ap.add_argument("--out", required=True, help="folder for bracketed.txt, plain.txt, paths.tsv")
    ap.add_argument("--seed", type=int, default=4242)
    ap.add_argument("--max-answers", type=int, default=30)
    ap.add_argument("--avoid", action="append", default=[],
                    help="a paths.tsv whose topics are not reused; repeatable or comma-separated")
    args = ap.parse_args()
    graph = load(args.kb)
    if not graph:
        sys.exit(f"{prog}: no head<TAB>relation<TAB>tail lines in {args.kb}")
    rng = random.Random(args.seed)
    used = set()
    for arg in args.avoid:
        for f in filter(None, (s.strip() for s in arg.split(","))):
            used |= avoided_topics(f)
    rows = sample(graph, rng, phrases, used, args.max_answers, prog)
    write(Path(args.out), rows, prog)


def main():
    run(PHRASES_C, "freeform_c.py", __doc__)

if __name__ == "__main__":
    main()
