#!/usr/bin/env python3
"""Free-form MetaQA questions, set G: a seventh, fresh hand-written phrase
table for testing a question planner on wording it was never tuned on.

    python3 benches/metaqa/freeform_g.py --kb $DATA/metaqa/kb.tsv \\
        --out benches/metaqa/freeform-g \\
        --avoid benches/metaqa/freeform/paths.tsv \\
        --avoid benches/metaqa/freeform-b/paths.tsv \\
        --avoid benches/metaqa/freeform-c/paths.tsv \\
        --avoid benches/metaqa/freeform-d/paths.tsv \\
        --avoid benches/metaqa/freeform-e/paths.tsv \\
        --avoid benches/metaqa/freeform-f/paths.tsv

PHRASES_G covers the same path types as freeform_f.py's PHRASES_F (every 1-hop
relation and inverse there, every 2-hop and 3-hop chain there), 6 phrasings
each, written the way varied users of a movie assistant or a search box ask:
plain questions, conversational ones with some context in front ("Planning a
{e} retrospective - ..."), imperatives ("Pull up the films scripted by
{e}."), the topic at the start, middle or end, terse search-box queries
("{e} writing partners"), and everyday or less usual words for roles and
things (the person behind the camera, the director's chair, scribes,
castmates, keywords and labels). About a quarter are written the way a
non-native speaker or a hurried typist writes: slightly ungrammatical ("the
script of {e} is written from who?"). Every phrasing names each hop of its
chain, and none repeats, or is a mere word swap of, one of MetaQA's own
templates.

Outputs have the same formats as sets E's and F's: OUT/bracketed.txt (topic
in [brackets]), OUT/plain.txt (no brackets), both `question<TAB>answer|answer`,
and OUT/paths.tsv (hop, bracketed question, topic, gold chain); 50 questions
per hop. The command line, KB loading, sampling (round-robin over path types,
answers excluding the topic), writing and reading of --avoid files are set
C's (freeform_c.py's run). --avoid may be given more than once or as a comma
list (pass sets A's to F's paths.tsv, as above, to keep the seven sets'
topics disjoint). Deterministic for a given KB, --seed and --avoid files.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from freeform_c import run  # noqa: E402

# (path, phrasings); {e} is the topic entity.
PHRASES_G = [
    # 1-hop
    ("directed_by", [
        "Who was the person behind the camera on {e}?",
        "{e} director name",
        "Watching {e} tonight and curious: which filmmaker was at the helm?",
        "Tell me the name of whoever helmed {e}.",
        "who is make the direction for movie {e}?",
        "Give me the director credit for {e}, please.",
    ]),
    ("written_by", [
        "Who's the screenwriter behind {e}?",
        "{e} screenwriter",
        "I loved the dialogue in {e}. Who penned the script?",
        "Find the writing credits for {e}.",
        "the script of {e} is written from who?",
        "Which author or screenwriter is credited with writing {e}?",
    ]),
    ("starred_actors", [
        "Who's in the cast of {e}?",
        "{e} cast list",
        "Thinking of rewatching {e} - remind me which actors had the main roles?",
        "Name the stars who appear in {e}.",
        "which actor are playing inside {e}",
        "Who can I see on screen when I watch {e}?",
    ]),
    ("has_genre", [
        "Would you call {e} a comedy, a drama, or something else? What's its genre?",
        "{e} genre",
        "Before I suggest {e} for movie night, what genre would you file it under?",
        "Categorize {e} by genre for me.",
        "{e} belong to which genre?",
        "Which category of film does {e} belong in?",
    ]),
    ("release_year", [
        "When did {e} come out?",
        "{e} release year",
        "I'm trying to remember how old {e} is - what year did it hit theaters?",
        "Tell me the year {e} premiered.",
        "in what year film {e} is out?",
        "{e} first showed in cinemas in which year?",
    ]),
    ("in_language", [
        "What language do the characters speak in {e}?",
        "{e} original language",
        "I want to watch {e} but might need subtitles - what language is the dialogue?",
        "Check the spoken language of {e} for me.",
        "film {e} is speaking which language?",
        "Is {e} in English or some other language? Which one?",
    ]),
    ("directed_by_inv", [
        "List the movies {e} was behind the camera for.",
        "{e} filmography as director",
        "I just discovered {e} as a filmmaker - which movies have they helmed?",
        "Show me every film with {e} in the director's chair.",
        "movies which {e} is director of them",
        "Which titles carry {e}'s name as director?",
    ]),
    ("written_by_inv", [
        "For which movies did {e} do the screenplay?",
        "{e} writing credits",
        "I'm a big fan of {e}'s scripts. Which films did they pen?",
        "Pull up the films scripted by {e}.",
        "which film the writer {e} has wrote?",
        "Name the titles where {e} gets a screenwriting credit.",
    ]),
    ("starred_actors_inv", [
        "What movies can I see {e} in?",
        "{e} movies as actor",
        "My friend has a crush on {e} - which films do they appear in?",
        "List the films featuring {e} in the cast.",
        "in which movies {e} was playing a role?",
        "Show me the acting credits of {e}.",
    ]),
    ("has_tags", [
        "What keywords are attached to {e}?",
        "{e} tags",
        "I'm building a recommendation list - what topics or labels describe {e}?",
        "Give me the tags people put on {e}.",
        "which label is describe the movie {e}?",
        "What themes is {e} tagged with?",
    ]),
    ("has_tags_inv", [
        "Find films carrying the tag {e}.",
        "{e} tagged movies",
        "I'm in the mood for something about {e} - which movies have that as a keyword?",
        "What titles are labeled {e}?",
        "movie list with keyword {e} please",
        "Show me films whose topic tags include {e}.",
    ]),
    # 2-hop
    ("directed_by -> directed_by_inv", [
        "Did the person who directed {e} make any other movies? Which ones?",
        "{e} director other films",
        "I really liked {e}. What else is out there from the same filmmaker?",
        "Show me more work from whoever was behind the camera on {e}.",
        "the man who direct {e}, which another movies he direct?",
        "Are there other titles from {e}'s director? List them.",
    ]),
    ("directed_by_inv -> directed_by", [
        "Which other directors are credited on the movies {e} directed?",
        "{e} films co-directors",
        "I know {e} often shares the director's chair - who directed alongside them on their films?",
        "Name every other filmmaker credited as director on {e}'s directing projects.",
        "who are other director in the movies of director {e}",
        "Which people shared directing credits with {e} on the films they made?",
    ]),
    ("directed_by_inv -> has_genre", [
        "Under what genres would you file the movies {e} directed?",
        "{e} directed films genres",
        "I want to know {e}'s style - what kinds of films have they made as a director?",
        "Tell me the genres of the films {e} has helmed.",
        "film from director {e} is which genre usually",
        "As a director, what categories of movies does {e} work in?",
    ]),
    ("directed_by_inv -> in_language", [
        "What languages do the characters speak in movies {e} directed?",
        "{e} directed movies language",
        "Planning a {e} retrospective - which languages will I need subtitles for across the films they directed?",
        "List the spoken languages of films helmed by {e}.",
        "the movies of director {e} is in what language",
        "Has {e} directed films in more than one language? Which languages?",
    ]),
    ("directed_by_inv -> release_year", [
        "What years did {e}'s films as director come out?",
        "{e} directing years",
        "Trying to map {e}'s career as a filmmaker - in which years did the movies they directed hit theaters?",
        "Give me the release years of everything {e} helmed.",
        "which year the films directed by {e} come out",
        "When did the movies with {e} in the director's chair premiere?",
    ]),
    ("directed_by_inv -> starred_actors", [
        "Which actors has {e} cast in the films they directed?",
        "{e} as director actors in films",
        "I love {e}'s films as director; who are the stars that appear in them?",
        "Name the cast members of films helmed by {e}.",
        "which actors play in movie that {e} was directing",
        "Who has worked in front of the camera for {e} as director?",
    ]),
    ("directed_by_inv -> written_by", [
        "Who wrote the scripts for the films {e} directed?",
        "{e} directed movies screenwriters",
        "Curious who {e} collaborates with on paper: who are the writers of the movies they directed?",
        "List the screenwriters on the films {e} has helmed.",
        "who is writer for movies where {e} was director",
        "Which scribes provided screenplays for movies under {e}'s direction?",
    ]),
    ("starred_actors -> starred_actors_inv", [
        "What other movies feature the actors from {e}?",
        "{e} cast other movies",
        "Loved the performers in {e}. Where else can I see them? Give me the films.",
        "Show films in which the cast of {e} also appear.",
        "other films where people who act in {e} also play",
        "Which movies put one of {e}'s stars on screen again?",
    ]),
    ("starred_actors_inv -> directed_by", [
        "Which directors has {e} worked with as an actor?",
        "{e} movies directors",
        "{e} is my favorite actor - who are the filmmakers behind the movies they starred in?",
        "Name the people who directed films featuring {e}.",
        "who direct the films where {e} is acting",
        "List the directors of any movie with {e} in the cast.",
    ]),
    ("starred_actors_inv -> has_genre", [
        "What genres are {e}'s movies as an actor?",
        "{e} acting films genre",
        "Is {e} more of a comedy or drama actor? What genres are the films they appear in?",
        "Tell me which genres the movies starring {e} belong to.",
        "{e} play in what kind of movies",
        "Sort by genre the films that {e} has a role in.",
    ]),
    ("starred_actors_inv -> in_language", [
        "What languages are the films with {e} in the cast?",
        "{e} acted movies languages",
        "I'm learning languages through film - which languages are spoken in movies featuring {e}?",
        "Find the languages of the films {e} appears in.",
        "movies of actor {e} are in which language",
        "In what languages has {e} performed on screen?",
    ]),
    ("starred_actors_inv -> release_year", [
        "When did the movies starring {e} come out?",
        "{e} acting filmography years",
        "I want a timeline of {e}'s acting career - what years were their films released?",
        "Give me the release years of the films {e} acted in.",
        "which years film with {e} were release",
        "Across {e}'s screen roles, what years did those movies hit cinemas?",
    ]),
    ("starred_actors_inv -> starred_actors", [
        "Who has shared the screen with {e} in a movie?",
        "{e} castmates",
        "Which actors appeared in films alongside {e}?",
        "I'm making a six-degrees chart: list every actor who was in a movie with {e}.",
        "who are actor playing in same film like {e}",
        "Name the rest of the cast of the movies {e} starred in.",
    ]),
    ("starred_actors_inv -> written_by", [
        "Which screenwriters wrote the films {e} has appeared in?",
        "{e} films screenwriters",
        "I'm curious about the scripts {e} picks. Who are the writers of their movies?",
        "Who penned the movies that {e} starred in?",
        "writer of movie where {e} is actor",
        "List the script writers behind films featuring {e}.",
    ]),
    ("written_by -> written_by_inv", [
        "What else did the screenwriter of {e} write?",
        "{e} writer other movies",
        "The script of {e} was great. Which other films came from the same writer?",
        "Show me more movies scripted by whoever wrote {e}.",
        "the person who write {e}, what other film he write",
        "Did {e}'s screenwriter pen any other movies? List them.",
    ]),
    ("written_by_inv -> directed_by", [
        "Which directors have brought {e}'s screenplays to the screen?",
        "{e} scripts directors",
        "I like {e} as a writer - who were the directors on the movies they wrote?",
        "Name the filmmakers who directed scripts penned by {e}.",
        "who is director for movie that {e} writing",
        "Behind the camera on movies {e} wrote - who was it?",
    ]),
    ("written_by_inv -> has_genre", [
        "Which genres has {e} written films in?",
        "{e} written films genre",
        "What kind of movies does {e} write screenplays for?",
        "I'm comparing writers: list the genres of the films scripted by {e}.",
        "films that {e} write are which genre",
        "Tell me the categories of movies credited to {e} as writer.",
    ]),
    ("written_by_inv -> in_language", [
        "Which tongues are heard in the movies {e} has written?",
        "{e} screenplays language",
        "Does {e} write only English-language films? Which languages are their scripted movies in?",
        "Find the languages of movies with a writing credit for {e}.",
        "movie written by {e} use what language",
        "Languages of the films scripted by {e}, please.",
    ]),
    ("written_by_inv -> release_year", [
        "What years did {e}'s screenplays reach theaters as films?",
        "{e} writing credits years",
        "I'm tracking {e}'s writing career - which years did the movies they wrote come out?",
        "Give me the release years for films penned by {e}.",
        "which year is the movies of writer {e} come out",
        "List when each film scripted by {e} premiered.",
    ]),
    ("written_by_inv -> starred_actors", [
        "Which actors have performed in films from {e}'s screenplays?",
        "{e} written movies cast",
        "I'm a fan of {e}'s writing - who starred in the films they scripted?",
        "Name the cast members of films penned by {e}.",
        "actor who play in film which {e} wrote",
        "Who has appeared on screen in movies with {e} as writer?",
    ]),
    ("written_by_inv -> written_by", [
        "Which other writers share script credits with {e}?",
        "{e} writing partners",
        "I know {e} rarely writes alone - who are the other writers credited on the films they wrote?",
        "List all other screenwriters on movies {e} helped write.",
        "who writing together with {e} on the movies",
        "Name the people also credited as writers on the scripts {e} worked on.",
    ]),
    # 3-hop
    ("directed_by -> directed_by_inv -> has_genre", [
        "Whoever directed {e} - what genres are that person's other films?",
        "{e} director filmography genres",
        "I liked {e}; what kinds of movies has its director made otherwise?",
        "Tell me the genres of the rest of the work by the person who directed {e}.",
        "the director of {e}, his other films is which genre?",
        "Which genres show up among movies from {e}'s director?",
    ]),
    ("directed_by -> directed_by_inv -> in_language", [
        "Which languages did {e}'s director shoot their other movies in?",
        "{e} director films languages",
        "Before I binge the filmmaker behind {e}, which languages are their other movies in?",
        "Find the spoken languages of films made by whoever directed {e}.",
        "other movie from director of {e} speak which language",
        "Across the other films of {e}'s director, what languages are used?",
    ]),
    ("directed_by -> directed_by_inv -> release_year", [
        "When did the other films from the director of {e} come out?",
        "{e} director other films release years",
        "I want to see how {e} fits in its director's career - what years were their other movies released?",
        "Give me the years of the other movies helmed by the person behind {e}.",
        "which years the director of {e} make his another films",
        "List release years for films by {e}'s director.",
    ]),
    ("directed_by -> directed_by_inv -> starred_actors", [
        "Cast of the other movies by the director of {e} - who's in them?",
        "{e} director other films cast",
        "The director of {e} has a good eye for talent - which actors did they cast in their other movies?",
        "Name the actors from other films made by whoever directed {e}.",
        "actors in the other movie of the man who direct {e}",
        "Which performers appear in the rest of the filmography of {e}'s director?",
    ]),
    ("directed_by -> directed_by_inv -> written_by", [
        "Who wrote the other films made by the director of {e}?",
        "{e} director other films writers",
        "Does {e}'s director always work with the same writers? Who wrote their other movies?",
        "List the screenwriters on other movies by the person who directed {e}.",
        "who writes the script for other films of {e} director",
        "Which writers scripted the remaining films of whoever was behind the camera on {e}?",
    ]),
    ("starred_actors -> starred_actors_inv -> directed_by", [
        "Who directed the other films the cast of {e} appeared in?",
        "{e} actors other movies directors",
        "The actors in {e} were great; which directors have they worked with on other films?",
        "Name the directors of other movies featuring {e}'s stars.",
        "who direct other films where actors of {e} play",
        "List the filmmakers behind other movies with someone from the {e} cast.",
    ]),
    ("starred_actors -> starred_actors_inv -> has_genre", [
        "What genres are the other movies {e}'s actors appear in?",
        "{e} cast other films genres",
        "I'm curious whether the stars of {e} stick to one style - what genres are their other films?",
        "Tell me the genres of other movies starring people from {e}.",
        "actors of {e} play in other movies of which genre",
        "Which genres do the other films with {e}'s cast belong to?",
    ]),
    ("starred_actors -> starred_actors_inv -> in_language", [
        "What languages are the other films starring {e}'s cast in?",
        "{e} actors other movies language",
        "Do the actors from {e} also work in other languages? Which languages are their other movies in?",
        "Find the languages of the other films featuring anyone from the cast of {e}.",
        "other film of the actors in {e} is in what language",
        "In the other movies of the people who act in {e}, which languages are spoken?",
    ]),
    ("starred_actors -> starred_actors_inv -> release_year", [
        "What years did the other films with {e}'s actors come out?",
        "{e} cast other films years",
        "I'm mapping the careers of the {e} cast - which years were their other movies released?",
        "Give me the release years of other films starring anyone in {e}.",
        "which year other film of {e} actor was come out",
        "List the premiere years of movies where the stars of {e} also appear.",
    ]),
    ("starred_actors -> starred_actors_inv -> written_by", [
        "Who wrote the other movies that {e}'s actors were in?",
        "{e} actors other films screenwriters",
        "The cast of {e} did other movies too - who were the writers on those?",
        "Name the screenwriters of other films featuring {e}'s stars.",
        "who is writer of other movies where the {e} actors play",
        "Which scribes penned movies that also star people from {e}?",
    ]),
    ("written_by -> written_by_inv -> directed_by", [
        "Which directors made the other films that {e}'s screenwriter wrote?",
        "{e} writer other movies directors",
        "The writer of {e} has other scripts out there; who directed those films?",
        "Name the directors of the other movies scripted by whoever wrote {e}.",
        "who direct the other films of the writer of {e}",
        "List the filmmakers who directed other screenplays by the author of {e}.",
    ]),
    ("written_by -> written_by_inv -> has_genre", [
        "Genre-wise, what are the other films from the writer of {e}?",
        "{e} screenwriter other films genres",
        "Does whoever wrote {e} usually write the same kind of movie? What genres are their other scripts?",
        "Tell me the genres of other movies penned by {e}'s writer.",
        "other movie of writer from {e} is which type",
        "Which genres cover the remaining films written by the screenwriter of {e}?",
    ]),
    ("written_by -> written_by_inv -> in_language", [
        "Which languages do the other films of {e}'s screenwriter use?",
        "{e} writer other movies languages",
        "If I like the script of {e}, which languages are the screenwriter's other films in?",
        "Find the languages of other movies scripted by the person who wrote {e}.",
        "the writer of {e} other film is which language",
        "In which languages were the other scripts by {e}'s writer filmed?",
    ]),
    ("written_by -> written_by_inv -> release_year", [
        "When did the other films by the writer of {e} come out?",
        "{e} writer other films years",
        "I'm tracing the screenwriter of {e} - which years did their other movies hit theaters?",
        "Give me release years for other films penned by whoever wrote {e}.",
        "what year the other movies of {e} writer released",
        "List the years of the other screenplays by {e}'s writer.",
    ]),
    ("written_by -> written_by_inv -> starred_actors", [
        "Which actors were cast in the other films that {e}'s screenwriter wrote?",
        "{e} writer other films actors",
        "The writer of {e} has other credits; which actors are in those films?",
        "Name the cast of other films scripted by the person who wrote {e}.",
        "actor who play in other movies of {e} writer",
        "Which performers appear in the rest of the filmography of whoever wrote {e}?",
    ]),
]


def main():
    run(PHRASES_G, "freeform_g.py", __doc__)

if __name__ == "__main__":
    main()
